package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// refusal holds the error codes a refused request is answered with, by
// the kind of request.
type refusal struct {
	topic   int16 // Produce, Fetch, ListOffsets: each partition's
	group   int16 // group membership, offsets, DescribeGroups
	list    int16 // ListGroups
	cluster int16 // InitProducerId, DescribeConfigs
	admin   int16 // CreateTopics, DeleteTopics, CreatePartitions
}

// denial answers a request the connection's token has no right for.
var denial = refusal{
	topic: errTopicAuthorizationFailed, group: errGroupAuthorizationFailed,
	list: errClusterAuthorizationFailed, cluster: errClusterAuthorizationFailed,
	admin: errTopicAuthorizationFailed,
}

// notLeading answers a request a follower's listener does not serve
// (leader.go): clients refresh their metadata, which names the leader, or
// look up the group coordinator again.
var notLeading = refusal{
	topic: errNotLeaderOrFollower, group: errNotCoordinator, list: errNotCoordinator,
	cluster: errNotController, admin: errNotController,
}

// refuse answers req with the error of its kind from r, changing nothing.
// A request of a kind it does not know closes the connection.
func (c *conn) refuse(req kmsg.Request, r refusal) (kmsg.Response, error) {
	switch rq := req.(type) {
	case *kmsg.ProduceRequest:
		resp := rq.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range rq.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, r.topic, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.FetchRequest:
		resp := rq.ResponseKind().(*kmsg.FetchResponse)
		for _, t := range rq.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, r.topic
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.ListOffsetsRequest:
		resp := rq.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range rq.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.Timestamp, rp.Offset = p.Partition, r.topic, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		// No broker and no topic but those named, each with the error:
		// the caller learns nothing of the engine.
		resp := rq.ResponseKind().(*kmsg.MetadataResponse)
		for _, t := range rq.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, r.topic
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.FindCoordinatorRequest:
		resp := rq.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID, resp.Port = r.group, -1, -1
		for _, k := range rq.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.ErrorCode, rc.NodeID, rc.Port = k, r.group, -1, -1
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp, nil
	case *kmsg.InitProducerIDRequest:
		resp := rq.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = r.cluster, -1, -1
		return resp, nil
	case *kmsg.JoinGroupRequest:
		resp := rq.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = r.group, -1
		return resp, nil
	case *kmsg.ConsumerGroupDescribeRequest:
		resp := rq.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range rq.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, r.group
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := rq.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = r.group
		return resp, nil
	case *kmsg.SyncGroupRequest:
		resp := rq.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = r.group
		return resp, nil
	case *kmsg.HeartbeatRequest:
		resp := rq.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = r.group
		return resp, nil
	case *kmsg.LeaveGroupRequest:
		resp := rq.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = r.group
		return resp, nil
	case *kmsg.OffsetCommitRequest:
		resp := rq.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range rq.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, r.group
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.OffsetFetchRequest:
		resp := rq.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = r.group
		for _, g := range rq.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, r.group
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	case *kmsg.CreateTopicsRequest:
		resp := rq.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range rq.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, r.admin
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DeleteTopicsRequest:
		resp := rq.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, name := range rq.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), r.admin
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.CreatePartitionsRequest:
		resp := rq.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range rq.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, r.admin
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DescribeGroupsRequest:
		resp := rq.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range rq.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, r.group
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	case *kmsg.ListGroupsRequest:
		resp := rq.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = r.list
		return resp, nil
	case *kmsg.DescribeConfigsRequest:
		resp := rq.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range rq.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, r.cluster
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("%s refused", kmsg.NameForKey(req.Key()))
}
