package kafka

// Rights is a bitmask of what a SASL token may do. The bits are those of
// remote.Rights (produce, consume, admin), so one token table serves both
// listeners; the package does not import remote, so a program serving only
// Kafka links no gRPC.
type Rights uint8

const (
	// RightProduce allows Produce and InitProducerId (and topic auto-creation
	// through Metadata).
	RightProduce Rights = 1 << iota
	// RightConsume allows Fetch, the group calls and offset commits and fetches.
	RightConsume
	// RightAdmin allows CreateTopics, DeleteTopics, CreatePartitions,
	// DescribeGroups, ListGroups, ConsumerGroupDescribe and
	// DescribeConfigs.
	RightAdmin
	// RightAll allows everything.
	RightAll = RightProduce | RightConsume | RightAdmin
)
