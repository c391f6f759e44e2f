package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// askedByID reports whether a topic of a Metadata request is asked for by
// its ID (KIP-516): from v12, as Kafka serves it, a topic with an ID; its
// name, if any, is not looked at. franz-go resolves the topic IDs of
// OffsetFetch v10 answers so.
func askedByID(req *kmsg.MetadataRequest, t kmsg.MetadataRequestTopic) bool {
	return req.GetVersion() >= 12 && t.TopicID != [16]byte{}
}

// refusedBeforeV12 is Kafka's answer to a Metadata v10 or v11 request that
// gives a topic an ID, or no name: those versions carry the ID field
// (KIP-516) but Kafka resolves topics by ID from v12 only, and refuses
// such a request whole, as an INVALID_REQUEST on each of its topics (the
// name asked for, "" for none, the ID asked with, no partitions), naming
// no broker and creating no topic. It is nil for any other request.
func refusedBeforeV12(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	if v := req.GetVersion(); v < 10 || v >= 12 {
		return nil
	}
	bad := false
	for _, t := range req.Topics {
		bad = bad || t.Topic == nil || t.TopicID != [16]byte{}
	}
	if !bad {
		return nil
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, errInvalidRequest
		if rt.Topic == nil {
			rt.Topic = kmsg.StringPtr("")
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// idsAsked lists the IDs of the topics a Metadata request asks for by ID.
func idsAsked(req *kmsg.MetadataRequest) [][16]byte {
	var ids [][16]byte
	for _, t := range req.Topics {
		if askedByID(req, t) {
			ids = append(ids, t.TopicID)
		}
	}
	return ids
}

// topicOfID describes the topic a Metadata request asked for by ID, from
// byID as topicsByID gave it (or its error): an ID no topic has gets
// UNKNOWN_TOPIC_ID, as from Kafka, with the ID and no name.
func topicOfID(id [16]byte, byID map[[16]byte]equeue.TopicInfo, err error, leader int32) kmsg.MetadataResponseTopic {
	if ti, ok := byID[id]; ok && err == nil {
		return topicMetadata(ti, leader)
	}
	rt := kmsg.NewMetadataResponseTopic()
	rt.TopicID, rt.ErrorCode = id, errUnknownTopicID
	if err != nil {
		rt.ErrorCode = errorCode(err)
	}
	return rt
}

// storedByID indexes by Kafka ID (topicID) the topics a cluster
// follower's store holds, for the topics a Metadata request asks for by
// ID: one pass over them for the request, not one per ID asked.
func storedByID(stored map[string]equeue.TopicInfo) map[[16]byte]equeue.TopicInfo {
	out := make(map[[16]byte]equeue.TopicInfo, len(stored))
	for _, ti := range stored {
		out[topicID(ti)] = ti
	}
	return out
}

// storedTopicOfID describes, on a cluster follower, the topic its store
// holds with the given ID (byID, from storedByID); one it does not hold
// (yet) gets LEADER_NOT_AVAILABLE, as a name it does not hold does, so
// clients ask the leader again.
func storedTopicOfID(id [16]byte, byID map[[16]byte]equeue.TopicInfo, leader int32) kmsg.MetadataResponseTopic {
	if ti, ok := byID[id]; ok {
		return topicMetadata(ti, leader)
	}
	rt := kmsg.NewMetadataResponseTopic()
	rt.TopicID, rt.ErrorCode = id, errLeaderNotAvailable
	return rt
}
