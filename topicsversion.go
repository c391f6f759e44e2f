package equeue

// TopicsVersion grows each time a topic is created or deleted, whoever
// does it (CreateTopic, auto-creation, DeleteTopic, the engine's own
// retry, dead-letter and reply topics): while it stays the same, the
// engine holds the same topics, under the same IDs. A topic's queues and
// messages may change meanwhile. It counts from Open, so it says nothing
// across engines. It is cheap (an atomic read), for callers that keep an
// index of the topics: read it before listing them, and list them again
// only once it has moved (the Kafka listener's index of topic IDs).
func (e *Engine) TopicsVersion() uint64 { return e.topicsVersion.Load() }

// TopicsVersion is the engine's (Engine.TopicsVersion): it grows with
// the topics of every namespace, so it may move while this view's topics
// stay the same, never the other way.
func (n *Namespace) TopicsVersion() uint64 { return n.e.TopicsVersion() }
