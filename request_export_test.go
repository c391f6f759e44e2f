package equeue

import "time"

// PendingRequests reports how many Requests of p wait for a reply, and how
// many replies its listener dropped (late or unknown).
func PendingRequests(p *Producer) (pending int, dropped int64) {
	p.req.mu.Lock()
	r := p.req.r
	p.req.mu.Unlock()
	if r == nil {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending), r.dropped.Load()
}

// ReplyTopicOf returns p's reply topic, "" before its first Request.
func ReplyTopicOf(p *Producer) string {
	p.req.mu.Lock()
	defer p.req.mu.Unlock()
	if p.req.r == nil {
		return ""
	}
	return p.req.r.topic
}

// ExpireReplyTopics runs one pass of the reply topic expiry as if at now,
// with the engine's ReplyTopicIdleTTL and idle time counted from long ago.
func ExpireReplyTopics(e *Engine, now time.Time) {
	e.expireReplyTopics(now, time.Time{}, e.opts.ReplyTopicIdleTTL)
}

// OnReplyExpiry makes f run when the reply topic expiry has found a topic
// idle, before it deletes it; nil removes it.
func OnReplyExpiry(e *Engine, f func(name string)) {
	if f == nil {
		e.replyExpiryHook.Store(nil)
		return
	}
	e.replyExpiryHook.Store(&f)
}

// ReplyPullsRunning reports how many pulls of reply topic name run.
func ReplyPullsRunning(e *Engine, name string) int {
	t, ok := e.lookupTopic(name)
	if !ok {
		return 0
	}
	return int(t.replyReads.running.Load())
}
