package equeue

import "strconv"

// Retry copies of a deleted topic. A failed message's copy in its group's
// retry topic names its origin topic (SysOriginTopic) and, since copies
// carry it, that topic's ID (SysOriginTopicID). A pull of a retry topic
// skips a copy whose origin topic no longer exists, or exists under
// another ID (deleted and made again under the name): its handler would
// see a message of a topic that is gone, or take it for a message of the
// new topic, which never had it. The pull passes such a copy as it passes
// an expired message, and counts it on a counter of its own
// (PullResult.DeletedTopicRetries, and Stats().DeletedTopicRetries for a
// group's pull), not with expired messages: a copy whose time-to-live
// also ran out counts as expired. The check is the engine's,
// in the pull itself, so in-process, remote and cluster consumers all get
// the same answer. A copy stored before copies carried the ID is
// delivered while a topic of its origin's name exists. Dead letters are
// not skipped: they are kept for inspection and redrive.

// stampOriginTopic records on d, the retry or dead-letter copy of a
// message stored in t, t's ID (SysOriginTopicID). A copy of a retry keeps
// what its retry carries: its origin is not t.
func stampOriginTopic(d *Message, t *topic) {
	if isInternalTopic(t.name) || d.sys[SysOriginTopic] != t.name {
		return
	}
	d.sys[SysOriginTopicID] = strconv.FormatUint(uint64(t.id), 10)
}

// originGone reports whether a retry copy whose origin topic is name,
// under ID id ("" for a copy stored before copies carried it), is of a
// topic that is gone: none of the name exists, or one with another ID. A
// copy that names no origin is not judged.
func (e *Engine) originGone(name, id string) bool {
	if name == "" {
		return false
	}
	t, ok := e.lookupTopic(name)
	if !ok || t.deleted.Load() {
		return true
	}
	if id == "" {
		return false
	}
	n, err := strconv.ParseUint(id, 10, 32)
	return err != nil || uint32(n) != t.id
}

// storedOriginGone is originGone of the origin that scanStoredRetry
// found in a stored record, read without decoding the record.
func (e *Engine) storedOriginGone(o recordOrigin) bool {
	return e.originGone(string(o.topic), string(o.topicID))
}
