package console_test

import (
	"fmt"
	"net/http"
	"regexp"
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

// TestConsole_RetryPageCountsTheSlowestBroadcastMember: a broadcasting
// group has an offset per member in each queue of its retry topic; the
// retry page kept only the last listed member's, so a member further
// ahead hid what the slower one has still to consume. It counts (and
// lists) from the slowest member, as the group's lag does.
func TestConsole_RetryPageCountsTheSlowestBroadcastMember(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	var jobs []*equeue.Message
	for i := range 3 {
		jobs = append(jobs, &equeue.Message{Body: []byte(fmt.Sprintf("job %d", i))})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "jobs", Queue: 0, Messages: jobs})
	require.NoError(t, err)

	// A clustering member sends the three jobs back to the retry topic,
	// then leaves.
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "workers", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "jobs"}}})
	require.NoError(t, err)
	grant := grantOn(t, a, "jobs")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "jobs", Queue: grant.Queue, Group: "workers", Member: "m1", Epoch: grant.Epoch, Max: 3})
	require.NoError(t, err)
	require.Len(t, res.Messages, 3)
	for off := range int64(3) {
		_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "workers", Member: "m1", Grant: grant, Offset: off, Attempts: 1, Cause: "image service timed out"})
		require.NoError(t, err)
	}
	rt := equeue.RetryTopic("workers")
	eventually(t, 10*time.Second, func() bool {
		ti, err := e.Topic(ctx, rt)
		return err == nil && len(ti.Queues) == 1 && ti.Queues[0].MaxOffset == 3
	}, "the jobs reached the retry topic")
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "workers", Member: "m1"}))

	// The group is now broadcasting, its two members consuming the retry
	// topic too: the one listed first is at 1, the other at 3.
	subs := []equeue.Subscription{{Topic: "jobs"}, {Topic: rt}}
	grants := map[string]equeue.Grant{}
	for _, m := range []string{"b1", "b2"} {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "workers", Member: m, Model: equeue.Broadcasting, Subscriptions: subs})
		require.NoError(t, err)
		grants[m] = grantOn(t, a, rt)
	}
	g, err := e.Group(ctx, "workers")
	require.NoError(t, err)
	var order []string
	for _, q := range g.Queues {
		if q.Topic == rt {
			order = append(order, q.Owner)
		}
	}
	require.Len(t, order, 2, "a row per member: %+v", g.Queues)
	for i, m := range order {
		gr := grants[m]
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: rt, Queue: gr.Queue, Group: "workers", Member: m, Epoch: gr.Epoch, Max: 3})
		require.NoError(t, err)
		require.Len(t, res.Messages, 3)
		require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "workers", Member: m,
			Offsets: []equeue.OffsetCommit{{Grant: gr, Offset: []int64{1, 3}[i]}}}))
	}

	s := serve(t, e, console.Options{})
	pg := s.get(t, prefix+"groups/workers/retry")
	require.Equal(t, http.StatusOK, pg.status)
	waiting := regexp.MustCompile(`(\d+) message\(s\) waiting in the retry topic`).FindStringSubmatch(pg.body)
	require.NotNil(t, waiting, "the page counts the waiting retries")
	assert.Equal(t, "2", waiting[1], "the slowest member has two to go")
	listed := regexp.MustCompile(`job \d`).FindAllString(pg.body, -1)
	assert.ElementsMatch(t, []string{"job 1", "job 2"}, listed, "listed from the slowest member's offset")
}

// grantOn returns the assignment's grant on a queue of topic.
func grantOn(t *testing.T, a equeue.Assignment, topic string) equeue.Grant {
	t.Helper()
	for _, g := range a.Queues {
		if g.Topic == topic {
			return g
		}
	}
	require.Failf(t, "no grant", "no queue of %s in %+v", topic, a.Queues)
	return equeue.Grant{}
}
