package kafka

// configDocs are the short descriptions DescribeConfigs gives, asked to
// include documentation (v3+), of the configs it reports, by name: what
// each means on this listener, where it differs from Kafka's.
var configDocs = map[string]string{
	"cleanup.policy":             "How old records are discarded: delete (by age or size). Log compaction is not offered.",
	"message.timestamp.type":     "The timestamp records carry: CreateTime, the producer's, or LogAppendTime, when the engine stored them (the listener's Options.LogAppendTime, for every topic).",
	"log.message.timestamp.type": "The timestamp type of every topic: CreateTime, the producer's, or LogAppendTime, when the engine stored them (the listener's Options.LogAppendTime).",
	"compression.type":           "producer: any codec a producer sends is taken; records are stored decompressed, one message each, and fetched uncompressed.",
	"max.message.bytes":          "The largest record the topic takes, in bytes: the engine's message size limit, which bounds every topic.",
	"message.max.bytes":          "The largest record the broker takes, in bytes: the engine's message size limit.",
	"retention.ms":               "How long the topic keeps a record, in milliseconds (-1: no age limit): the topic's own age limit.",
	"retention.bytes":            "The bytes past which the topic deletes its oldest records (-1: no limit); it bounds all the topic's partitions together.",
	"broker.id":                  "This broker's ID, as Metadata gives it.",
	"default.replication.factor": "The replication factor of a topic made without one: 1, each partition has one replica.",
	"min.insync.replicas":        "The replicas that must acknowledge a write with acks=all: 1, each partition has one replica.",
}
