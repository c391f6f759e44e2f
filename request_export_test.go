package equeue

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
