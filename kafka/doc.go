// Package kafka serves the Kafka wire protocol over an equeue engine, so
// existing Kafka clients (franz-go, sarama, librdkafka and kcat, the Python
// and Java clients) produce to and consume from it.
//
// # Mapping
//
// The listener is one broker that leads every partition. A Kafka topic is an
// equeue topic and its partitions are the topic's queues; offsets are queue
// offsets, the high watermark is the queue's end and the log start offset is
// its low watermark (what retention left). A record's key becomes the
// message's first key, its value the body, its headers the properties (a
// repeated header keeps its last value and header order is lost), and the
// header named by Options.TagHeader the tag. The record timestamp becomes
// the message's BornAt; fetched records carry BornAt (CreateTime) or the
// time the engine stored them (LogAppendTime, see Options). A null value is
// fetched as an empty one. The engine's internal topics (%RETRY%, %DLQ%) are
// not legal Kafka names and are hidden.
//
// # Groups
//
// Consumer groups use the classic protocol, coordinated here: members join,
// the group leader assigns partitions on the client side, the listener
// relays the assignment (SyncGroup followers wait for the leader, never for
// a timer). A member that joins with a group.instance.id is static
// (KIP-345): a restart of its instance takes its place without a
// rebalance, and the member replaced is fenced (FENCED_INSTANCE_ID).
// Membership lives in the listener; committed offsets are stored
// in the engine beside those of native groups (Engine.CommitGroupOffsets),
// so they survive restarts, and a native consumer group and a Kafka group
// can read the same topic. A Kafka group may not take a native group's
// name, whether or not that group has members, until the native group is
// deleted: its joins, and commits without a generation, are answered
// GROUP_AUTHORIZATION_FAILED. Nor may a native consumer take the name of a
// Kafka group that has members or a join under way: the listener claims
// it in the engine (Engine.ClaimGroup), which refuses the native join
// with equeue.ErrGroupNameTaken. While a group of either protocol has members,
// the listener keeps it in use in the engine (Engine.KeepGroup), so that
// Options.GroupIdleTTL does not delete its offsets while its members,
// consuming a quiet topic, commit nothing.
//
// KIP-848 consumer groups (ConsumerGroupHeartbeat, group.protocol =
// consumer) are assigned by the listener: each topic's partitions are
// spread over the members subscribed to it, and a partition moves to
// another member only after the one that had it released it. A member
// that joins with a group.instance.id is static: it may leave for a while
// (member epoch -2) and keep its partitions for a member of the same
// instance ID to take over.
//
// # Produce
//
// A produce request carries one record batch per partition, as Kafka has
// it, checked as Kafka's broker checks it (CORRUPT_MESSAGE for a damaged
// batch, INVALID_RECORD for one that contradicts itself) and stored with
// one engine append, or refused whole. Batches may be compressed with
// gzip, snappy, lz4 or zstd. An
// idempotent producer's sequence numbers are checked per partition: a
// retried batch is acknowledged with its first offset and not stored twice.
// That state is kept in memory only, so it does not cover a restart of the
// listener, nor a batch whose append had an unknown outcome, unless the
// topic has a dedup window: an idempotent producer's records are given the
// message IDs kafka-<producer>-<epoch>-<partition>-<sequence>-<mark>,
// which the window recognizes; the mark, keyed with
// Options.ProducerRecordKey, tells them from native messages named alike.
// After a restart the state is learned from the partition's last records
// the listener marked (and, below the first of them, from records without
// a mark or with the built-in key's, which a listener before marks, or
// before the key, stored); the retry of a batch stored before those read is
// answered DUPLICATE_SEQUENCE_NUMBER, which clients take for stored, and
// one that records read corrupt may hide KAFKA_STORAGE_ERROR, which they
// retry.
// Transactions are not offered.
//
// # Clusters
//
// Over a node of a replicated cluster (a Broker that is a ClusterNode,
// such as *cluster.Node) every node may run a listener. The leader's
// serves; a follower's names the leader's listener in Metadata and
// FindCoordinator and refuses the rest with the errors on which Kafka
// clients look the leader up again, so clients given the nodes' addresses
// find the leader and follow a failover (see ClusterNode).
//
// # Security
//
// With Options.TLS the listener serves TLS; with Options.Tokens it requires
// SASL/PLAIN, the password being a token whose rights (Rights, the same
// as remote.Rights)
// decide what the connection may do, as for gRPC.
package kafka
