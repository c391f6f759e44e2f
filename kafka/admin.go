package kafka

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// Topic administration: a Kafka topic is an equeue topic, its partitions
// are the topic's queues. There is one broker, so the replication factor
// must be 1 or -1 (the default); configs are accepted and ignored, but for
// those the listener cannot honour (unservedConfig).

func (c *conn) createTopics(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := kmsg.NewPtrCreateTopicsResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		code, msg := c.createTopic(t, req.ValidateOnly)
		rt.ErrorCode = code
		if msg != "" {
			rt.ErrorMessage = &msg
		}
		if code == errNone {
			if ti, err := c.s.b.Topic(c.ctx, t.Topic); err == nil {
				rt.NumPartitions, rt.ReplicationFactor = int32(len(ti.Queues)), 1
			} else if req.ValidateOnly {
				rt.NumPartitions, rt.ReplicationFactor = c.partitionsOf(t.NumPartitions), 1
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *conn) createTopic(t kmsg.CreateTopicsRequestTopic, validateOnly bool) (int16, string) {
	switch {
	case hidden(t.Topic) || equeue.ValidateName(t.Topic) != nil:
		return errInvalidTopic, fmt.Sprintf("topic names are 1-127 characters of [A-Za-z0-9._-]: %q", t.Topic)
	}
	// As Kafka's controller, a topic that exists is answered so before
	// its settings are looked at: other settings would not make it.
	if _, err := c.s.b.Topic(c.ctx, t.Topic); err == nil {
		return errTopicAlreadyExists, fmt.Sprintf("topic %q already exists", t.Topic)
	}
	switch {
	case t.ReplicationFactor != -1 && t.ReplicationFactor != 1:
		return errInvalidReplicationFactor, "one broker: replication factor must be 1"
	case len(t.ReplicaAssignment) > 0:
		return errInvalidRequest, "manual replica assignment is not supported"
	case t.NumPartitions == 0 || t.NumPartitions < -1 || t.NumPartitions > 256:
		return errInvalidPartitions, "partitions must be 1..256 (or -1 for the default)"
	}
	if msg := c.unservedConfig(t.Configs); msg != "" {
		return errInvalidConfig, msg
	}
	n := int(t.NumPartitions)
	if n < 0 {
		n = 0 // the engine's default
	}
	if validateOnly {
		return errNone, ""
	}
	if err := c.s.b.CreateTopic(c.ctx, t.Topic, n); err != nil {
		return errorCode(err), err.Error()
	}
	return errNone, ""
}

func (c *conn) deleteTopics(req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	names := req.TopicNames
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		var err error
		if hidden(name) {
			err = fmt.Errorf("%w: %q", equeue.ErrTopicNotFound, name)
		} else {
			err = c.s.b.DeleteTopic(c.ctx, name)
		}
		c.s.maxTS.forget(name) // whatever came of it: forgetting costs a scan only
		if err == nil || errors.Is(err, equeue.ErrTopicNotFound) {
			c.s.pids.forgetTopic(name) // the producers' states of a topic that is gone
		}
		rt.ErrorCode = errorCode(err)
		if err != nil {
			msg := err.Error()
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *conn) createPartitions(req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		code, msg := c.createPartition(t, req.ValidateOnly)
		rt.ErrorCode = code
		if msg != "" {
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *conn) createPartition(t kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, string) {
	if hidden(t.Topic) {
		return errUnknownTopicOrPartition, ""
	}
	ti, err := c.s.b.Topic(c.ctx, t.Topic)
	if err != nil {
		return errorCode(err), err.Error()
	}
	add, msg := queuesToAdd(ti, int(t.Count))
	if msg != "" {
		return errInvalidPartitions, msg
	}
	if len(t.Assignment) > 0 {
		return errInvalidRequest, "manual replica assignment is not supported"
	}
	if validateOnly {
		return errNone, ""
	}
	if err := c.s.b.AddQueues(c.ctx, t.Topic, add); err != nil {
		code := errorCode(err)
		if errors.Is(err, equeue.ErrInvalidArgument) {
			code = errInvalidPartitions
		}
		return code, err.Error()
	}
	return errNone, ""
}

// queuesToAdd returns the queues AddQueues must add for ti to have count
// partitions, or why it cannot have them: the count only grows, up to
// equeue.MaxQueuesPerTopic, and a topic with priorities has a partition
// per lane, so it grows by whole queues of lanes. A validate_only request
// gets the same answer as the change.
func queuesToAdd(ti equeue.TopicInfo, count int) (int, string) {
	have, lanes := len(ti.Queues), max(ti.Priorities, 1)
	switch {
	case count <= have:
		return 0, fmt.Sprintf("topic has %d partitions; the count can only grow", have)
	case count > equeue.MaxQueuesPerTopic:
		return 0, fmt.Sprintf("a topic has at most %d partitions", equeue.MaxQueuesPerTopic)
	case (count-have)%lanes != 0:
		return 0, fmt.Sprintf("topic has %d priority lanes per queue: the count must grow by a multiple of %d", lanes, lanes)
	}
	return (count - have) / lanes, ""
}

// describeConfigs answers the few topic and broker settings clients ask
// about, read-only (no AlterConfigs is served), with their types, and
// their synonyms and documentation (configDocs) when the request asks
// for them.
func (c *conn) describeConfigs(req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var configs []describedConfig
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if hidden(r.ResourceName) {
				rr.ErrorCode = errUnknownTopicOrPartition
				break
			}
			ti, err := c.s.b.Topic(c.ctx, r.ResourceName)
			if err != nil {
				rr.ErrorCode = errorCode(err)
				break
			}
			configs = c.topicConfigs(ti)
		case kmsg.ConfigResourceTypeBroker:
			// This broker's ID as Metadata names it (a cluster node's
			// listener has its node's), or "" for the brokers' default
			// config; another broker's is refused, as Kafka refuses it.
			self := strconv.Itoa(int(c.selfID()))
			if r.ResourceName != "" && r.ResourceName != self {
				rr.ErrorCode = errInvalidRequest
				msg := fmt.Sprintf("broker %q: this broker is %s", r.ResourceName, self)
				rr.ErrorMessage = &msg
				break
			}
			configs = c.brokerConfigs(self)
		default:
			rr.ErrorCode = errInvalidRequest
		}
		for _, dc := range configs {
			if len(r.ConfigNames) > 0 && !slices.Contains(r.ConfigNames, dc.name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value, rc.ReadOnly = dc.name, kmsg.StringPtr(dc.value), true
			rc.Source, rc.ConfigType = dc.source, dc.typ
			rc.IsDefault = dc.source == kmsg.ConfigSourceDefaultConfig // v0's
			if doc, ok := configDocs[dc.name]; ok && req.IncludeDocumentation {
				rc.Documentation = &doc
			}
			if req.IncludeSynonyms {
				for _, syn := range dc.synonyms {
					s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					s.Name, s.Value, s.Source = syn.name, kmsg.StringPtr(syn.value), syn.source
					rc.ConfigSynonyms = append(rc.ConfigSynonyms, s)
				}
			}
			rr.Configs = append(rr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}
