package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// viewCall calls one method of a Namespace view naming name wherever the
// method takes a name.
type viewCall func(ctx context.Context, v *equeue.Namespace, name string) (any, error)

// viewCalls are the methods of a Namespace view that take a name, each
// called with it in every place it takes one.
var viewCalls = map[string]viewCall{
	"Route": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) { return v.Route(ctx, n) },
	"Append": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.Append(ctx, &equeue.AppendRequest{Topic: n, Messages: []*equeue.Message{{Topic: n, Body: []byte("a")}}})
	},
	"AppendAsync": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		done := make(chan error, 1)
		v.AppendAsync(ctx, &equeue.AppendRequest{Topic: n, Messages: []*equeue.Message{{Body: []byte("a")}}}, func(_ equeue.AppendResult, err error) { done <- err })
		return nil, <-done
	},
	"Pull": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.Pull(ctx, &equeue.PullRequest{Topic: n, Max: 10})
	},
	"WaitAny": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.WaitAny(ctx, []*equeue.PullRequest{{Topic: n}}, time.Millisecond)
	},
	"JoinGroup": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.JoinGroup(ctx, &equeue.JoinRequest{Group: n, Member: "m", Subscriptions: []equeue.Subscription{{Topic: n}}})
	},
	"Heartbeat": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: n, Member: "m"})
	},
	"LeaveGroup": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.LeaveGroup(ctx, &equeue.LeaveRequest{Group: n, Member: "m"})
	},
	"ReleaseQueues": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.ReleaseQueues(ctx, n, "m", []equeue.Grant{{QueueRef: equeue.QueueRef{Topic: n}}})
	},
	"CommitOffsets": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.CommitOffsets(ctx, &equeue.CommitRequest{Group: n, Member: "m", Offsets: []equeue.OffsetCommit{{Grant: equeue.Grant{QueueRef: equeue.QueueRef{Topic: n}}, Offset: 1}}})
	},
	"FetchOffsets": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.FetchOffsets(ctx, n, "m", []equeue.Grant{{QueueRef: equeue.QueueRef{Topic: n}}})
	},
	"SendBack": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.SendBack(ctx, &equeue.SendBackRequest{Group: n, Member: "m", Grant: equeue.Grant{QueueRef: equeue.QueueRef{Topic: n}}, DeadLetter: true})
	},
	"CreateTopic": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.CreateTopic(ctx, n, 1)
	},
	"CreateTopicWith": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.CreateTopicWith(ctx, n, equeue.TopicOptions{Queues: 1})
	},
	"SetTopicLimits": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.SetTopicLimits(ctx, n, equeue.TopicLimits{MaxMessages: 1})
	},
	"AddQueues": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.AddQueues(ctx, n, 1)
	},
	"DeleteTopic": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.DeleteTopic(ctx, n)
	},
	"SetQueueWritable": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.SetQueueWritable(ctx, n, 0, false)
	},
	"Topic": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) { return v.Topic(ctx, n) },
	"QueueInfo": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.QueueInfo(ctx, n, 0)
	},
	"Group": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) { return v.Group(ctx, n) },
	"ResetOffsets": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.ResetOffsets(ctx, n, equeue.ResetRequest{Offsets: map[equeue.QueueRef]int64{{Topic: n}: 0}})
	},
	"ListDeadLetters": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.ListDeadLetters(ctx, n, equeue.ListDeadLettersRequest{})
	},
	"DeadLetters": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.DeadLetters(ctx, n, 0, 10)
	},
	"Redrive": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return v.Redrive(ctx, n, equeue.RedriveRequest{All: true, ToTopic: true})
	},
	"DeleteGroup": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.DeleteGroup(ctx, n, equeue.DeleteGroupOptions{Force: true})
	},
	"DeleteReplyTopic": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.DeleteReplyTopic(ctx, n)
	},
	"CommitGroupOffsets": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.CommitGroupOffsets(ctx, n, map[equeue.QueueRef]int64{{Topic: n}: 1})
	},
	"GroupOffsets": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) { return v.GroupOffsets(ctx, n) },
	"KeepGroup":    func(ctx context.Context, v *equeue.Namespace, n string) (any, error) { return nil, v.KeepGroup(ctx, n) },
	// A claim that lapses at once, so it keeps no join of the table out.
	"ClaimGroup": func(ctx context.Context, v *equeue.Namespace, n string) (any, error) {
		return nil, v.ClaimGroup(ctx, n, time.Nanosecond)
	},
}

// viewCallsWithoutName are the methods of a Namespace view that take no
// name: what they list or report is checked on its own. TopicsVersion is
// the engine's count of topic creations and deletions: it moves with
// other namespaces' topics (documented), which tells a view that some
// topic changed somewhere, never which name exists. DefaultQueues is the
// engine's option, the same for every namespace, as is MaxMessageSize,
// the engine's limit on a message.
var viewCallsWithoutName = []string{"Name", "Engine", "FastPathOwner", "Topics", "Groups", "Delayed", "TopicsVersion", "DefaultQueues", "MaxMessageSize"}

// TestNamespace_ViewCannotTellWhetherAnotherNamespacesNameExists calls
// every method of a Namespace view (enumerated, so a new one must be
// added here) on tenant-a, once naming something tenant-b has (its topic,
// group, retry, dead-letter and reply topics, by tenant-b's names and by
// the engine's) and once the same kind of thing that exists nowhere: the
// two must both succeed or fail with the same error but for the name, and
// nothing of tenant-b may show or change. The listing methods show
// nothing of tenant-b to a tenant-a that has nothing.
func TestNamespace_ViewCannotTellWhetherAnotherNamespacesNameExists(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	a, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	b, err := e.Namespace("tenant-b")
	require.NoError(t, err)

	vt := reflect.TypeOf(a)
	for i := range vt.NumMethod() {
		name := vt.Method(i).Name
		_, named := viewCalls[name]
		assert.True(t, named || slices.Contains(viewCallsWithoutName, name), "Namespace.%s is not checked here", name)
	}

	// tenant-b: a topic with messages, a group with a dead letter (so its
	// retry and dead-letter topics), a self-tracked group, a reply topic,
	// a delayed message.
	require.NoError(t, b.CreateTopic(ctx, "orders", 2))
	for i := range 4 {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "orders", Queue: i % 2, Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "secret-b-%d", i)}}})
		require.NoError(t, err)
	}
	_, err = b.Append(ctx, &equeue.AppendRequest{Topic: "orders", Messages: []*equeue.Message{{Body: []byte("secret-b-later"), Delay: time.Hour}}})
	require.NoError(t, err)
	var handled bodies
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "orders"}}, MaxAttempts: 1,
		Handler: handled.handler("secret-b-0")})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	eventually(t, 20*time.Second, func() bool {
		dls, err := b.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		return err == nil && len(dls) == 1 && len(handled.keys()) == 4
	}, "tenant-b's group dead-lettered one message")
	require.NoError(t, c.Close())
	require.NoError(t, b.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{{Topic: "orders", Queue: 0}: 1}))
	const replyID = "0123456789abcdef0123456789abcdef"
	_, err = b.Route(ctx, equeue.ReplyTopicPrefix+replyID)
	require.NoError(t, err)
	for _, n := range []string{"tenant-b:orders", equeue.RetryTopic("tenant-b:g"), equeue.DLQTopic("tenant-b:g"), equeue.ReplyTopicPrefix + "tenant-b:" + replyID} {
		_, err := e.Topic(ctx, n)
		require.NoError(t, err, "tenant-b has %s", n)
	}
	before := namespaceState(t, b)

	// tenant-a has nothing yet: its lists show nothing.
	topics, err := a.Topics(ctx)
	require.NoError(t, err)
	assert.Empty(t, topics)
	groups, err := a.Groups(ctx)
	require.NoError(t, err)
	assert.Empty(t, groups)
	delayed, err := a.Delayed(ctx, 10)
	require.NoError(t, err)
	assert.Zero(t, delayed.Pending, "tenant-b's delayed message is not tenant-a's")
	assert.Empty(t, delayed.Next)

	pairs := [][2]string{
		{"orders", "zzabsent"},
		{"g", "x7q"},
		{"kg", "x8q"},
		{equeue.RetryTopic("g"), equeue.RetryTopic("x7q")},
		{equeue.DLQTopic("g"), equeue.DLQTopic("x7q")},
		{equeue.ReplyTopicPrefix + replyID, equeue.ReplyTopicPrefix + "fedcba9876543210fedcba9876543210"},
		{"tenant-b:orders", "tenant-b:zzabsent"},
		{"tenant-b:g", "tenant-b:x7q"},
		{"tenant-b:kg", "tenant-b:x8q"},
		{equeue.RetryTopic("tenant-b:g"), equeue.RetryTopic("tenant-b:x7q")},
		{equeue.DLQTopic("tenant-b:g"), equeue.DLQTopic("tenant-b:x7q")},
		{equeue.ReplyTopicPrefix + "tenant-b:" + replyID, equeue.ReplyTopicPrefix + "tenant-b:fedcba9876543210fedcba9876543210"},
	}
	for method, call := range viewCalls {
		for _, p := range pairs {
			have, haveErr := call(ctx, a, p[0])
			_, noneErr := call(ctx, a, p[1])
			require.Equal(t, haveErr == nil, noneErr == nil, "%s(%q) %v, %s(%q) %v: whether it fails tells what tenant-b has", method, p[0], haveErr, method, p[1], noneErr)
			text := fmt.Sprintf("%+v", have)
			if haveErr != nil {
				assert.Equal(t, haveErr.Error(), putNameBack(noneErr.Error(), p), "%s: the error text tells what tenant-b has", method)
				for _, sentinel := range []error{equeue.ErrTopicNotFound, equeue.ErrGroupNotFound, equeue.ErrInvalidName, equeue.ErrOutsideNamespace} {
					assert.Equal(t, errors.Is(haveErr, sentinel), errors.Is(noneErr, sentinel), "%s(%q): errors.Is(%v) tells what tenant-b has", method, p[0], sentinel)
				}
				text = haveErr.Error()
			}
			assert.NotContains(t, text, "secret-b", "%s(%q) shows tenant-b's messages", method, p[0])
			assert.NotContains(t, text, "tenant-a:", "%s(%q) shows an engine name", method, p[0])
		}
	}
	assert.Equal(t, before, namespaceState(t, b), "no call of tenant-a changed tenant-b")

}

// namespaceState is what a namespace holds, as its view shows it.
func namespaceState(t *testing.T, v *equeue.Namespace) string {
	t.Helper()
	ctx := ctxT(t)
	topics, err := v.Topics(ctx)
	require.NoError(t, err)
	groups, err := v.Groups(ctx)
	require.NoError(t, err)
	for i := range groups {
		groups[i].Members = nil // liveness is not state a call could change
	}
	offs, err := v.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	dls, err := v.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	var dead []string
	for _, d := range dls {
		dead = append(dead, fmt.Sprintf("%s redriven=%v", d.Message.Body, d.Redriven))
	}
	delayed, err := v.Delayed(ctx, 0)
	require.NoError(t, err)
	return fmt.Sprintf("%+v\n%+v\n%v\n%v\n%d", topics, groups, offs, dead, delayed.Pending)
}

// putNameBack is text with the name of what nobody has (p[1]) put back
// to the name of what tenant-b has (p[0]), replacing only the part in
// which they differ.
func putNameBack(text string, p [2]string) string {
	have, none := p[0], p[1]
	for len(have) > 0 && len(none) > 0 && have[0] == none[0] {
		have, none = have[1:], none[1:]
	}
	for len(have) > 0 && len(none) > 0 && have[len(have)-1] == none[len(none)-1] {
		have, none = have[:len(have)-1], none[:len(none)-1]
	}
	return strings.ReplaceAll(text, none, have)
}
