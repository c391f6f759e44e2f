package kafka

import (
	"errors"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// nodeID is the broker ID of a listener over a single engine: the only
// broker, leader of every partition. A cluster node's listener has the ID
// of its node (brokerID, leader.go).
const nodeID int32 = 0

// clusterID names the single-broker cluster.
const clusterID = "equeue"

// advertised returns the host and port clients should use for this broker.
func (c *conn) advertised() (string, int32) {
	addr := c.s.o.AdvertisedAddr
	if addr == "" {
		addr = c.nc.LocalAddr().String()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	p, _ := strconv.Atoi(port)
	return host, int32(p)
}

// hidden reports whether a topic is internal to the engine (retry and
// dead-letter topics) or belongs to a namespace ("ns:name", when the
// listener serves the whole engine): such names are not legal Kafka topic
// names, so Kafka clients never see them. A listener serving a namespace
// (a *equeue.Namespace) sees that namespace's topics by their plain names.
func hidden(name string) bool {
	return strings.HasPrefix(name, "%") || strings.Contains(name, equeue.NamespaceSeparator)
}

// metadata names the brokers and topics. The one broker named is the
// leader: this listener, or, on a cluster follower, the leader's listener.
// A follower lists the topics its store holds (it has no engine), led by
// the leader, and answers a topic it does not hold with
// LEADER_NOT_AVAILABLE, so clients ask again, of the leader (which may
// create it). With no leader known it names itself, controller -1, and no
// topics. From v12 a topic may be asked for by its ID (askedByID); a v10
// or v11 request that gives one an ID is refused (refusedBeforeV12).
func (c *conn) metadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	if resp := refusedBeforeV12(req); resp != nil {
		return resp
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.ClusterID = kmsg.StringPtr(clusterID)
	all := req.Topics == nil || (req.GetVersion() == 0 && len(req.Topics) == 0)
	v := c.leader()
	if !v.self {
		resp.ControllerID = v.id
		if v.id >= 0 {
			resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: v.id, Host: v.host, Port: v.port}}
		} else {
			host, port := c.advertised()
			resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: c.selfID(), Host: host, Port: port}}
		}
		stored := c.followerTopics(v)
		if all {
			names := make([]string, 0, len(stored))
			for n := range stored {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				resp.Topics = append(resp.Topics, topicMetadata(stored[n], v.id))
			}
			return resp
		}
		var byID map[[16]byte]equeue.TopicInfo
		for _, t := range req.Topics {
			if askedByID(req, t) {
				if byID == nil {
					byID = storedByID(stored)
				}
				resp.Topics = append(resp.Topics, storedTopicOfID(t.TopicID, byID, v.id))
				continue
			}
			if t.Topic != nil {
				if ti, ok := stored[*t.Topic]; ok {
					resp.Topics = append(resp.Topics, topicMetadata(ti, v.id))
					continue
				}
			}
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, errLeaderNotAvailable // the leader may create it
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: v.id, Host: v.host, Port: v.port}}
	resp.ControllerID = v.id
	if all {
		topics, err := c.s.b.Topics(c.ctx)
		if err != nil {
			if !errors.Is(err, equeue.ErrNotLeader) { // a cluster node between tenures: clients ask again
				c.s.log.Warn("kafka: metadata: list topics", "err", err)
			}
			return resp
		}
		for _, ti := range topics {
			if !hidden(ti.Name) {
				resp.Topics = append(resp.Topics, topicMetadata(ti, v.id))
			}
		}
		return resp
	}
	var byID map[[16]byte]equeue.TopicInfo
	var idErr error
	if ids := idsAsked(req); len(ids) > 0 {
		byID, idErr = c.s.topicsByID(c.ctx, ids)
	}
	for _, t := range req.Topics {
		if askedByID(req, t) {
			resp.Topics = append(resp.Topics, topicOfID(t.TopicID, byID, idErr, v.id))
			continue
		}
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		resp.Topics = append(resp.Topics, c.oneTopic(name, req.AllowAutoTopicCreation || req.GetVersion() < 4, v.id))
	}
	return resp
}

// oneTopic describes a named topic, creating it through the broker's
// auto-create (Route) when the client allows it and the engine does.
func (c *conn) oneTopic(name string, autoCreate bool, leader int32) kmsg.MetadataResponseTopic {
	bad := kmsg.NewMetadataResponseTopic()
	bad.Topic = kmsg.StringPtr(name)
	if hidden(name) || equeue.ValidateName(name) != nil {
		bad.ErrorCode = errInvalidTopic
		return bad
	}
	ti, err := c.s.b.Topic(c.ctx, name)
	if errors.Is(err, equeue.ErrTopicNotFound) && autoCreate && c.rights&RightProduce != 0 {
		if _, rerr := c.s.b.Route(c.ctx, name); rerr == nil {
			ti, err = c.s.b.Topic(c.ctx, name)
		}
	}
	if err != nil {
		bad.ErrorCode = errorCode(err)
		return bad
	}
	return topicMetadata(ti, leader)
}

func topicMetadata(ti equeue.TopicInfo, leader int32) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic, t.TopicID = kmsg.StringPtr(ti.Name), topicID(ti)
	t.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(ti.Queues))
	for _, q := range ti.Queues {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = int32(q.ID)
		p.Leader = leader
		p.LeaderEpoch = 0
		p.Replicas = []int32{leader}
		p.ISR = []int32{leader}
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

// followerTopics are the topics a follower's store holds, by name, when
// the leader is known (none otherwise, or when the node cannot list them).
func (c *conn) followerTopics(v leaderView) map[string]equeue.TopicInfo {
	tr, ok := c.s.node.(topicReader)
	if !ok || v.id < 0 {
		return nil
	}
	topics, err := tr.StoredTopics()
	if err != nil {
		c.s.log.Warn("kafka: metadata: list the follower's topics", "err", err)
		return nil
	}
	out := make(map[string]equeue.TopicInfo, len(topics))
	for _, ti := range topics {
		if !hidden(ti.Name) {
			out[ti.Name] = ti
		}
	}
	return out
}
