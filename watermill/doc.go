// Package watermill connects equeue to Watermill
// (github.com/ThreeDotsLabs/watermill): a Publisher and a Subscriber that
// work on any equeue.Broker, the in-process *equeue.Engine or a remote
// client. It is a separate module so that the equeue module does not
// depend on Watermill.
//
// # Messages
//
// The payload is the equeue message body and every metadata entry is an
// equeue property. The Watermill UUID travels in the UUIDProperty property
// and comes back unchanged (a message whose metadata has that key is
// refused with equeue.ErrInvalidArgument); the equeue message ID is left
// to the broker, which keeps it unique per stored message even when one
// Watermill message is published twice or to several topics. A received
// message also carries where it was stored: the metadata keys
// equeue_topic, equeue_queue, equeue_offset, equeue_message_id and
// equeue_attempt. A Marshaler and an Unmarshaler can replace the mapping;
// DefaultMarshaler can take the routing key and the tag from metadata.
//
// The Publisher creates a missing topic on its first publish to it (with
// PublisherConfig.Queues queues) when the broker implements TopicCreator,
// as *equeue.Engine does; the Subscriber does the same on Subscribe and in
// SubscribeInitialize. A refusal to create it, as a remote client whose
// token lacks the admin right gets, does not stop Publish or Subscribe on a
// topic that exists; on a missing one it is part of their error.
//
// # Delivery
//
// Each Subscribe call starts one equeue.Consumer. Its handler sends the
// message on the subscription's channel and waits:
//
//   - Ack finishes the message. The consumer commits offsets through its
//     sliding window (the lowest offset not finished yet) every
//     ConsumerOptions.CommitInterval, when a queue is handed over and on
//     Close, so a finished message is not delivered to the group again once
//     that commit happened.
//   - Nack (or a handler error in a Watermill Router) has the message
//     delivered again after SubscriberConfig.NackResendDelay, up to
//     MaxAttempts deliveries (1<<20 by default): a message Nack'd on its
//     last one goes to the group's dead-letter topic equeue.DLQTopic(group)
//     instead. Only a Nack (or an Unmarshaler error or panic) sends a message there,
//     never a stop or a timeout. An orderly subscription retries the
//     message in place. An unordered one goes on with other messages
//     meanwhile: in a clustering group it stores the message in the
//     group's retry topic equeue.RetryTopic(group), due after
//     NackResendDelay (equeue.RetryAfter); in a broadcasting group, which
//     has no retry topic, its consumer retries the message locally after
//     NackResendDelay. Either way the redelivered message keeps its UUID,
//     metadata and original topic, queue and offset.
//   - When the subscription's context ends or the Subscriber is closed, no
//     further message is handed out and the context of those handed out
//     ends. The consumer stops starting handlers, then waits up to
//     ConsumerOptions.ShutdownTimeout (DefaultShutdownTimeout unless set)
//     for their Ack or Nack; a message still not Ack'd then fails once, as
//     one counted attempt, and is delivered again to the group, even when
//     it was its last attempt (never to the dead letters). A message the
//     subscription was waiting to hand out is delivered again too, but
//     that run is not counted: the application never saw it. The
//     consumer commits what was Ack'd, leaves its group, and then the
//     channel is closed. So Close takes up to ShutdownTimeout while
//     messages are in flight.
//
// Delivery is at least once: a message can be delivered again after a
// crash (what was Ack'd since the last commit), after a rebalance that
// interrupted it, or when an Ack races with a shutdown. Handlers should be
// idempotent or deduplicate on the UUID.
//
// By default a subscription is orderly: one message at a time per queue, in
// queue order, the next one only after the previous was Ack'd, a Nack'd one
// retried in place. SubscriberConfig.Unordered handles up to Concurrency
// messages of a subscription at once instead.
//
// A message handed out and never Ack'd nor Nack'd holds its place until
// the subscription stops or, in a clustering group, its queue is handed
// over to another member: then, after ConsumerOptions.HandoffTimeout, its
// context ends and it fails as one counted attempt, and the new owner gets
// it again. In an orderly subscription it holds its queue. In an unordered
// one it holds one of the Concurrency places, and its queue too once
// ConsumerOptions.MaxSpan (2,000 unless set) later messages of that queue
// were pulled past it: the queue's pulling pauses until the message is
// finished. An unordered subscription of a clustering group is the
// exception: it waits at most
// ConsumerOptions.ConsumeTimeout (DefaultConsumeTimeout, 15 min, unless
// set) for the Ack or Nack; then the message fails as one counted attempt
// (never to the dead letters), its context ends, a later Ack or Nack of it
// is ignored, it is delivered again after NackResendDelay, and the next
// message takes its place.
//
// Publisher.Close waits for the Publish calls in progress, up to
// PublisherConfig.CloseTimeout (DefaultCloseTimeout, 5 s, unless set);
// then it ends the contexts of their sends, which fail with
// ErrPublisherClosed (and, for a send that the broker may have stored,
// equeue.ErrIndeterminate), and returns once they have returned. It does
// not wait for a Publish inside Marshaler.Marshal then: that Publish fails
// with ErrPublisherClosed once Marshal returns, and sends nothing. Likewise
// an Unmarshaler that never returns does not hold Subscriber.Close: the
// consumer gives up on its handler after twice ShutdownTimeout, and the
// message, never handed out, goes back to the group.
//
// # Consumer groups
//
// With SubscriberConfig.ConsumerGroup set, Subscribe calls (in one process
// or many) join that equeue group in clustering mode: the topic's queues are
// shared among the members, each message goes to one of them, and a new
// member continues from the group's committed offsets. Empty ConsumerGroup
// gives every Subscribe call a new group of its own, so each subscription
// receives every message (fan-out). A group that has no offset yet starts
// where SubscriberConfig.ConsumeFrom says, the earliest stored message by
// default.
//
// A group in broadcasting mode (ConsumerOptions.Model equeue.Broadcasting
// in SubscriberConfig.Consumer) gives every message to each member, and
// keeps offsets per member ID. A broadcasting subscription goes on from
// its own offsets after a restart only when it joins again with the same
// SubscriberConfig.MemberID: give each instance of a service a stable one
// of its own (its host or pod name, say). Without one, every Subscribe call
// is a new member that starts where ConsumeFrom says. One live
// subscription at a time holds a member ID in a group: a Subscribe with
// the ID of a live one fails with equeue.ErrMemberIDInUse.
//
// An equeue group consumes one set of topics at a time. To subscribe one
// Subscriber with a ConsumerGroup to several topics (a Router with several
// handlers), set SubscriberConfig.GroupName, for example to
// TopicScopedGroup, which puts the group in the topic's namespace and
// shortens a name too long to be valid. Groups made for fan-out
// subscriptions stay in the engine after the subscription ends (an
// unordered one with its retry topic) until they are deleted:
// Engine.DeleteGroup, or the engine option Options.GroupIdleTTL, which
// deletes groups idle for that long.
//
// # Watermill features
//
// The package passes Watermill's universal Pub/Sub test suite
// (pubsub/tests.TestPubSub) on an in-process engine, with fan-out
// subscribers and with subscribers sharing a group, orderly and unordered,
// with these Features:
//
//   - ConsumerGroups: true. Named groups share a topic's queues.
//   - Persistent: true. Messages live in the broker, not in a Publisher or
//     Subscriber; a later Subscriber reads what was published before it.
//   - NewSubscriberReceivesOldMessages: true for subscribers without a
//     ConsumerGroup, since each Subscribe call is a new group starting at the
//     earliest message. A subscriber joining an existing named group starts
//     from the group's offsets instead.
//   - GuaranteedOrder: only for topics with one queue and orderly
//     subscribers (the default mode), which is how it is tested. A topic's
//     messages are spread over its queues and queues are consumed in
//     parallel, so with several queues order holds per queue only: give
//     messages that must stay ordered the same routing key
//     (DefaultMarshaler.KeyMetadata), or create the topic with one queue.
//   - ExactlyOnceDelivery: false. Delivery is at least once (see above).
//   - ContextPreserved: false. A message's context does not travel through
//     the broker; a received message's context derives from the Subscribe
//     context and ends once it is Ack'd or Nack'd, or the subscription stops.
//   - RestartServiceCommand: not set. The suite's reconnect test restarts an
//     external broker process; the in-process engine has none.
package watermill
