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

// storedTopicOfID describes, on a cluster follower, the topic its store
// holds with the given ID; one it does not hold (yet) gets
// LEADER_NOT_AVAILABLE, as a name it does not hold does, so clients ask
// the leader again.
func storedTopicOfID(id [16]byte, stored map[string]equeue.TopicInfo, leader int32) kmsg.MetadataResponseTopic {
	for _, ti := range stored {
		if topicID(ti) == id {
			return topicMetadata(ti, leader)
		}
	}
	rt := kmsg.NewMetadataResponseTopic()
	rt.TopicID, rt.ErrorCode = id, errLeaderNotAvailable
	return rt
}
