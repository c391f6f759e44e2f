package equeue_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// topicCreatedHold is a slog.Handler that, once armed, holds the first
// "topic created" record of topic until release: the goroutine that
// created the topic logs it right after the topic is made, so it waits
// there with the topic in place.
type topicCreatedHold struct {
	topic   string
	armed   atomic.Bool
	once    sync.Once
	in      chan struct{}
	release func()
	held    chan struct{}
}

// newTopicCreatedHold returns an unarmed hold of topic's creation, released
// at the end of the test at the latest.
func newTopicCreatedHold(t *testing.T, topic string) *topicCreatedHold {
	h := &topicCreatedHold{topic: topic, in: make(chan struct{}), held: make(chan struct{})}
	h.release = sync.OnceFunc(func() { close(h.held) })
	t.Cleanup(h.release)
	return h
}

// Enabled takes every level: the engine logs a topic's creation at Info.
func (h *topicCreatedHold) Enabled(context.Context, slog.Level) bool { return true }

// Handle holds the first record of topic's creation once armed.
func (h *topicCreatedHold) Handle(_ context.Context, r slog.Record) error {
	if !h.armed.Load() || r.Message != "topic created" {
		return nil
	}
	of := false
	r.Attrs(func(a slog.Attr) bool {
		of = of || (a.Key == "topic" && a.Value.String() == h.topic)
		return true
	})
	if of {
		h.once.Do(func() {
			close(h.in)
			<-h.held
		})
	}
	return nil
}

// WithAttrs drops attrs: only those of each call are read.
func (h *topicCreatedHold) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup ignores the group name.
func (h *topicCreatedHold) WithGroup(string) slog.Handler { return h }

// TestDeleteGroup_WhileAJoinMakesItsRetryTopicLeavesTheGroupItsRetryTopic
// starts a consumer of a group the engine does not hold in memory (it
// never existed, or only its dead letters are left from an earlier life),
// or holds without members nor retry topic, and holds its join right after the join created the group's retry
// topic, before it made the group. A DeleteGroup of the name starts then;
// then both go on. Whichever comes first, the group the join made must
// have its retry topic while its member is live, and a message its handler
// fails must be retried. Before, the deletion (which found no group in
// memory, or took it out of memory) deleted the retry topic the join had
// just created, and the join then made its group without it: it had
// none until a send-back made it again.
func TestDeleteGroup_WhileAJoinMakesItsRetryTopicLeavesTheGroupItsRetryTopic(t *testing.T) {
	for _, life := range []string{"none", "deadletters", "inmemory"} {
		for _, kind := range storeKinds {
			t.Run(life+"/"+kind, func(t *testing.T) {
				ctx := ctxT(t)
				hold := newTopicCreatedHold(t, equeue.RetryTopic("g"))
				f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1},
					Logger: slog.New(hold)})
				e := f.E
				if life == "deadletters" {
					e = groupNotInMemory(t, f, false)
					_, err := e.Topic(ctx, equeue.RetryTopic("g"))
					require.ErrorIs(t, err, equeue.ErrTopicNotFound, "only the dead letters are left")
				} else {
					require.NoError(t, e.CreateTopic(ctx, "t", 1))
				}
				if life == "inmemory" {
					require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0}),
						"a group without members or retry topic")
				}

				atTopics, resume := make(chan struct{}), make(chan struct{})
				var atOnce sync.Once
				equeue.OnDeleteGroupTopics(e, func(string) {
					atOnce.Do(func() { close(atTopics) })
					<-resume
				})
				t.Cleanup(func() { equeue.OnDeleteGroupTopics(e, nil) })
				var resumeOnce sync.Once
				letGo := func() { hold.release(); resumeOnce.Do(func() { close(resume) }) }
				t.Cleanup(letGo)

				var mu sync.Mutex
				var attempts []int
				hold.armed.Store(true)
				c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
					HeartbeatInterval: 100 * time.Millisecond, RetryTopicDelays: []time.Duration{time.Millisecond},
					Handler: func(_ context.Context, m *equeue.Message) error {
						if string(m.Body) != "m" {
							return nil // the earlier life's message
						}
						mu.Lock()
						attempts = append(attempts, m.Attempt)
						mu.Unlock()
						if m.Attempt == 0 {
							return errors.New("fails once")
						}
						return nil
					}})
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close() })
				started := make(chan error, 1)
				go func() { started <- c.Start(ctx) }()
				select {
				case <-hold.in: // the join created the retry topic; the group is not made
				case <-ctx.Done():
					t.Fatal("the join did not create the group's retry topic")
				}

				deleted := make(chan error, 1)
				go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
				eventually(t, 10*time.Second, func() bool {
					select {
					case <-atTopics: // the deletion is about to delete the group's topics
						return true
					default:
					}
					return goroutineIn("equeue.(*Engine).fenceGroupName(", "equeue.(*gateLock).lock(") // it waits for the join
				}, "the deletion reaches the group's topics or waits for the join")

				letGo()
				require.NoError(t, <-started, "the consumer joined")
				if err := <-deleted; err != nil {
					require.ErrorIs(t, err, equeue.ErrGroupHasMembers, "a deletion after the join finds its member")
				}

				info, err := e.Group(ctx, "g")
				require.NoError(t, err)
				require.Len(t, info.Members, 1, "the member is live")
				_, err = e.Topic(ctx, equeue.RetryTopic("g"))
				assert.NoError(t, err, "a live group has its retry topic")

				_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("m")})
				require.NoError(t, err)
				eventually(t, 20*time.Second, func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(attempts) >= 2 && attempts[len(attempts)-1] == 1
				}, "the failed message is retried: attempts %v", func() any { mu.Lock(); defer mu.Unlock(); return attempts })
				mu.Lock()
				assert.Equal(t, []int{0, 1}, attempts, "handled once, then retried once")
				mu.Unlock()
			})
		}
	}
}

// TestJoinGroup_WaitingForADeletionEndsWithItsContext joins a group whose
// deletion is under way: the join waits for it, and gives up, with its
// context's error, when that context ends first. The deletion then ends
// as it would have, and a join after it makes the group with its retry
// topic.
func TestJoinGroup_WaitingForADeletionEndsWithItsContext(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0}))
	atTopics, resume := make(chan struct{}), make(chan struct{})
	equeue.OnDeleteGroupTopics(e, func(string) {
		close(atTopics)
		<-resume
	})
	t.Cleanup(func() { equeue.OnDeleteGroupTopics(e, nil) })
	var resumeOnce sync.Once
	letGo := func() { resumeOnce.Do(func() { close(resume) }) }
	t.Cleanup(letGo)
	deleted := make(chan error, 1)
	go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
	select {
	case <-atTopics:
	case <-ctx.Done():
		t.Fatal("DeleteGroup did not reach the group's topics")
	}

	join := &equeue.JoinRequest{Group: "g", Member: "a", Incarnation: "1", Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}}
	jctx, cancel := context.WithCancel(ctx)
	joined := make(chan error, 1)
	go func() {
		_, err := e.JoinGroup(jctx, join)
		joined <- err
	}()
	eventually(t, 10*time.Second, func() bool { return equeue.GroupDeletionWaits(e) > 0 || len(joined) > 0 }, "the join waits for the deletion")
	cancel()
	require.ErrorIs(t, <-joined, context.Canceled, "the join gives up with its context")

	letGo()
	require.NoError(t, <-deleted)
	_, err := e.JoinGroup(ctx, join)
	require.NoError(t, err, "a join after the deletion makes the group")
	_, err = e.Topic(ctx, equeue.RetryTopic("g"))
	assert.NoError(t, err, "with its retry topic")
}
