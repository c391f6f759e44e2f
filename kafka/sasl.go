package kafka

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL/PLAIN: with Options.Tokens set, a connection must authenticate
// before anything but ApiVersions; the password is one of the server's
// tokens and its rights decide what the connection may do.

const plain = "PLAIN"

func (c *conn) saslHandshake(req *kmsg.SASLHandshakeRequest) *kmsg.SASLHandshakeResponse {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = []string{plain}
	if req.Mechanism != plain {
		resp.ErrorCode = errUnsupportedSASLMechanism
		return resp
	}
	c.handshake = true
	return resp
}

func (c *conn) saslAuthenticate(req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	if !c.handshake {
		return nil, fmt.Errorf("SaslAuthenticate without a PLAIN handshake")
	}
	if c.s.tokens == nil {
		c.authed = true // nothing to check: every caller may do everything
		return resp, nil
	}
	parts := bytes.SplitN(req.SASLAuthBytes, []byte{0}, 3)
	if len(parts) == 3 {
		if r, ok := c.s.rightsOf(string(parts[2])); ok {
			c.authed, c.rights = true, r
			return resp, nil
		}
	}
	msg := "unknown token"
	resp.ErrorCode, resp.ErrorMessage = errSASLAuthenticationFailed, &msg
	c.s.log.Info("kafka: SASL authentication failed", "remote", c.nc.RemoteAddr().String())
	return resp, nil
}

// denied answers a request the connection's token has no right for, with
// the authorization error of its kind, changing nothing.
func (c *conn) denied(req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopicAuthorizationFailed
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.FetchRequest:
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopicAuthorizationFailed
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = errClusterAuthorizationFailed, -1, -1
		return resp, nil
	case *kmsg.JoinGroupRequest:
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = errGroupAuthorizationFailed, -1
		return resp, nil
	case *kmsg.SyncGroupRequest:
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = errGroupAuthorizationFailed
		return resp, nil
	case *kmsg.HeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = errGroupAuthorizationFailed
		return resp, nil
	case *kmsg.LeaveGroupRequest:
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = errGroupAuthorizationFailed
		return resp, nil
	case *kmsg.OffsetCommitRequest:
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errGroupAuthorizationFailed
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.OffsetFetchRequest:
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = errGroupAuthorizationFailed
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, errGroupAuthorizationFailed
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, errTopicAuthorizationFailed
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, name := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), errTopicAuthorizationFailed
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, errTopicAuthorizationFailed
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DescribeGroupsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, errGroupAuthorizationFailed
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	case *kmsg.ListGroupsRequest:
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = errClusterAuthorizationFailed
		return resp, nil
	case *kmsg.DescribeConfigsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, errClusterAuthorizationFailed
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("%s denied", kmsg.NameForKey(req.Key()))
}
