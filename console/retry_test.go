package console_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

func TestConsole_RetryPageListsPendingRetries(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "jobs", Keys: []string{"job-1"}, Body: []byte("resize image 42")})
	require.NoError(t, err)

	// A member pulls the job and sends it back, as a failing handler would.
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "workers", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "jobs"}}})
	require.NoError(t, err)
	var grant equeue.Grant
	for _, g := range a.Queues {
		if g.Topic == "jobs" {
			grant = g
		}
	}
	require.Equal(t, "jobs", grant.Topic)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "jobs", Queue: grant.Queue, Group: "workers", Member: "m1", Epoch: grant.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "workers", Member: "m1", Grant: grant, Offset: 0, Attempts: 1, Cause: "image service timed out"})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		ti, err := e.Topic(ctx, equeue.RetryTopic("workers"))
		return err == nil && len(ti.Queues) > 0 && ti.Queues[0].MaxOffset == 1
	}, "the job reached the retry topic")

	s := serve(t, e, console.Options{})
	pg := s.get(t, prefix+"groups/workers/retry")
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "1 message(s) waiting in the retry topic")
	assert.Contains(t, pg.body, "image service timed out")
	assert.Contains(t, pg.body, "resize image 42")
	assert.Contains(t, pg.body, `<a href="/admin/topics/jobs">jobs</a>/0@0`, "links to the original")
}
