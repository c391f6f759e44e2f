// Package equeue is an embeddable, durable queue engine in the design of
// RocketMQ: topics split into queues, producers that route by key, consumer
// groups that share queues (clustering) or each receive everything
// (broadcast), at-least-once delivery with sliding-window offsets, retries
// and dead letters, persisted in Badger inside the host process.
//
// # Engine
//
// Open an Engine on a directory (or with Options.InMemory) and Close it when
// done. The Engine is the broker: it stores messages, answers pulls, and
// coordinates consumer groups. All its methods are safe for concurrent use.
// Engine.Close first closes the Consumers and Producers opened on it
// in-process, so their final commits and pending sends are stored; do not
// call it from a Handler, since it waits for handlers to return.
//
// # Producing
//
// A Producer sends messages to a Broker — the Engine in-process, or a
// network client from package remote. Send returns the queue, offset and ID;
// under SyncAlways it returns only once the message is on disk. SendAsync and
// SendBatch let the engine gather many messages into one write and one fsync.
//
// # Consuming
//
// A Consumer joins a group, consumes the queues the group grants it, calls
// the Handler for each message and commits offsets. A new group starts at
// the earliest stored message unless ConsumerOptions.From says otherwise.
// Close it to drain (running handlers finish with a live context, up to
// ShutdownTimeout), commit and leave the group. A PullConsumer is the same membership for
// programs that run their own fetch loop and commit explicitly.
//
// # Errors
//
// Errors callers may need to tell apart are exported sentinels matched with
// errors.Is. Bad input returns an error, never a panic.
package equeue
