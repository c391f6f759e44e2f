package remote_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// prioBroker is what the test needs of the in-process side: an Engine, or
// the Namespace a token is scoped to.
type prioBroker interface {
	equeue.Broker
	CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error
}

// A remote client's own Pull of a topic with priorities gives each message
// the lane it was stored in, as the in-process Engine.Pull does, whichever
// way the answer comes: a browse (a stored batch, or messages from a
// Namespace), a group's long-poll (one PullMany call for all of them) or a
// group's pull read ahead, from the server's own gRPC server or from one of
// the application's with an interceptor (protobuf encodes the answer).
func TestPriority_RemotePullCarriesTheLane(t *testing.T) {
	servers := map[string]func(t *testing.T, e *equeue.Engine) (local prioBroker, addr, token string){
		"engine": func(t *testing.T, e *equeue.Engine) (prioBroker, string, string) {
			return e, startServer(t, e, "", nil).addr, ""
		},
		"namespace": func(t *testing.T, e *equeue.Engine) (prioBroker, string, string) {
			ns, err := e.Namespace("tenant-a")
			require.NoError(t, err)
			return ns, namespaceServer(t, e).addr, "tok-a"
		},
		"intercepted": func(t *testing.T, e *equeue.Engine) (prioBroker, string, string) {
			_, _, addr, _ := interceptedServer(t, e, nil)
			return e, addr, ""
		},
	}
	modes := map[string]int{"browse": 0, "long-poll": -1, "read-ahead": remote.DefaultPullAhead}
	for sname, start := range servers {
		for mode, ahead := range modes {
			t.Run(sname+"/"+mode, func(t *testing.T) {
				ctx := ctxT(t)
				e := openEngine(t, nil)
				local, addr, token := start(t, e)
				require.NoError(t, local.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
				p := newProducer(t, local)
				for prio := range 3 {
					for i := range 2 {
						_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: prio, Body: fmt.Appendf(nil, "%d-%d", prio, i)})
						require.NoError(t, err)
					}
				}
				c := dial(t, addr, &remote.ClientOptions{Token: token, PullAhead: ahead})
				reqs := map[int]*equeue.PullRequest{}
				if mode == "browse" {
					for q := range 3 {
						reqs[q] = &equeue.PullRequest{Topic: "p", Queue: q, Max: 10}
					}
				} else {
					a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
					require.NoError(t, err)
					require.Len(t, a.Queues, 3)
					for _, g := range a.Queues {
						reqs[g.Queue] = &equeue.PullRequest{Topic: "p", Queue: g.Queue, Max: 10, Group: "g", Member: "m", Epoch: g.Epoch, Wait: 5 * time.Second}
					}
				}
				for q := range 3 {
					in, err := local.Pull(ctx, &equeue.PullRequest{Topic: "p", Queue: q, Max: 10})
					require.NoError(t, err)
					res, err := c.Pull(ctx, reqs[q])
					require.NoError(t, err)
					require.Equal(t, equeue.PullFound, res.Status, "queue %d", q)
					require.Len(t, res.Messages, 2, "queue %d", q)
					assert.Equal(t, in.Priority, res.Priority, "queue %d: the result's lane, as in-process", q)
					for i, m := range res.Messages {
						assert.Equal(t, in.Messages[i].Priority, m.Priority, "queue %d, message %d: as in-process", q, i)
						assert.Equal(t, q, m.Priority, "queue %d, message %d: its lane", q, i)
					}
				}
			})
		}
	}
}

// A dead letter whose copy does not record its lane, as here one of a
// topic that had no priorities then, is listed over the wire with the
// lane ListDeadLetters gives in-process: the lowest, the only lane its
// message had, whatever lane its origin queue ID is among the lanes its
// topic has now. (A copy made before copies recorded their lane takes
// that of its origin queue ID, over the wire too:
// TestPriority_OldDeadLetterTakesTheLaneOfItsQueue.)
func TestPriority_RemoteDeadLettersWithoutARecordedLane(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, nil)
	require.NoError(t, e.CreateTopic(ctx, "p", 3))
	for q := range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "p", Queue: q, Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "%d", q)}}})
		require.NoError(t, err)
	}
	dead := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
		Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("no")) }})
	eventually(t, 20*time.Second, func() bool {
		dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		require.NoError(t, err)
		return len(dls) == 3
	}, "the messages are dead-lettered")
	require.NoError(t, dead.Close())
	// Made again with priorities: queue IDs 0, 1 and 2 are lanes 0, 1 and 2.
	require.NoError(t, e.DeleteTopic(ctx, "p"))
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))

	lanes := func(dls []equeue.DLQEntry) map[string]int {
		out := map[string]int{}
		for _, dl := range dls {
			out[string(dl.Message.Body)] = dl.Message.Priority
		}
		return out
	}
	in, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"0": 0, "1": 0, "2": 0}, lanes(in), "in-process")
	over, err := c.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	assert.Equal(t, lanes(in), lanes(over), "over the wire")
}
