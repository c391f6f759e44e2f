package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The request-reply part of TestCluster_JepsenFeatures: a group answers
// each request on requestTopic with Reply, and a requester sends requests
// one after another through the nemesis (Producer.Request). A request may
// time out, but a reply it gets must be the reply to it, never another's;
// and requests must be answered again after the heal.
const (
	requestTopic = "rq"
	requestGroup = "gresp"
)

type requestWorkload struct {
	j         *jepsen
	requester *equeue.Producer
	replier   *equeue.Producer
	responder *equeue.Consumer
	stop      context.CancelFunc
	done      sync.WaitGroup
	answered  atomic.Int64

	mu     sync.Mutex
	wrong  []string       // replies to another request
	errors map[string]int // failed requests, by error text
}

func (j *jepsen) startRequests() *requestWorkload {
	t := j.t
	r := &requestWorkload{j: j, errors: map[string]int{}}
	var err error
	r.requester, err = equeue.NewProducer(j.cc, nil)
	require.NoError(t, err)
	r.replier, err = equeue.NewProducer(j.cc, nil)
	require.NoError(t, err)
	r.responder, err = equeue.NewConsumer(j.cc, equeue.ConsumerOptions{
		Group: requestGroup, Subscriptions: []equeue.Subscription{{Topic: requestTopic}},
		HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			return equeue.Reply(ctx, r.replier, m, []byte("re:"+string(m.Body)), nil)
		},
	})
	require.NoError(t, err)
	require.NoError(t, r.responder.Start(context.Background()))
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	r.done.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			body := fmt.Sprintf("rq-%d", i)
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			reply, err := r.requester.Request(rctx, &equeue.Message{Topic: requestTopic, Body: []byte(body)})
			cancel()
			r.mu.Lock()
			switch {
			case err != nil:
				if ctx.Err() == nil {
					r.errors[err.Error()]++
				}
			case string(reply.Body) != "re:"+body:
				r.wrong = append(r.wrong, fmt.Sprintf("%s got %q", body, reply.Body))
			default:
				r.answered.Add(1)
			}
			r.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond) // no busy loop while no node answers
			}
		}
	})
	return r
}

// waitAnswered waits until more requests are answered than now.
func (r *requestWorkload) waitAnswered(more int64) {
	want := r.answered.Load() + more
	eventually(r.j.t, 60*time.Second, func() error {
		if got := r.answered.Load(); got < want {
			return fmt.Errorf("%d of %d requests answered", got, want)
		}
		return nil
	})
}

// close stops the requester and the responders and checks the replies.
func (r *requestWorkload) close() {
	t := r.j.t
	r.stop()
	r.done.Wait()
	closeConsumer(t, r.responder)
	for _, p := range []*equeue.Producer{r.requester, r.replier} {
		if err := p.Close(); err != nil {
			t.Logf("close producer: %v", err) // its reply topic may outlive a failover
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Empty(t, r.wrong, "replies to another request")
	t.Logf("requests: %d answered; failed: %v", r.answered.Load(), r.errors)
}
