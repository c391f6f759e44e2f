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
// # Methods users call, and the Broker seam
//
// Producers and Consumers reach a broker through the Broker interface, which
// the Engine implements in-process and package remote over the network. Its
// methods (Route, Append, JoinGroup, Heartbeat, LeaveGroup, ReleaseQueues,
// CommitOffsets, FetchOffsets, SendBack) appear in the Engine's method list
// but are the group protocol: applications send with Producer, consume
// with Consumer or PullConsumer, and administer with the Engine's topic,
// group, offset and dead-letter methods. See the Engine type for the full
// grouping.
//
// # Retries and dead letters
//
// A Handler's error is a failed attempt. In a clustering group the message
// comes back through the group's retry topic after
// ConsumerOptions.RetryTopicDelays (default DefaultRetryDelays: 10 s, 30 s,
// 1 m ... 2 h); orderly and broadcasting consumers retry it in place after
// LocalRetryDelay. A handler can return RetryAfter to choose the wait or
// DeadLetter to give up at once. After MaxAttempts the message goes to the
// group's dead-letter topic, which Engine.ListDeadLetters lists and
// Engine.Redrive sends back to the group's retry topic (or, with
// RedriveRequest.ToTopic, to the message's topic).
//
// # Request-reply and group lifecycle
//
// Producer.Request sends a message and waits for the answer a handler sends
// with Reply, through a reply topic of the producer's own. Engine.DeleteGroup
// removes a group with its offsets, retries and dead letters;
// Options.GroupIdleTTL does so for groups left without members.
//
// # Errors
//
// Errors callers may need to tell apart are exported sentinels matched with
// errors.Is. Bad input returns an error, never a panic.
package equeue
