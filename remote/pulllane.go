package remote

import "github.com/equeue-go/equeue"

// markLane gives res's messages the priority lane they were stored in
// (PullResponse.priority, res.Priority), as Engine.Pull does: neither the
// wire's messages nor a stored batch carry it. A broker that predates the
// field sends 0, and its messages keep Priority 0.
func markLane(res equeue.PullResult) {
	if res.Priority == 0 {
		return
	}
	for _, m := range res.Messages {
		m.Priority = res.Priority
	}
}
