package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

// heldBroker is the console's broker, answering its listing calls with at
// most two messages (or dead letters) each, as a broker may, with bodies
// of their own. Before each such call it collects garbage and counts the
// bytes of the bodies it answered before that the console still holds:
// a page that keeps whole bodies, not their head, is seen there.
type heldBroker struct {
	console.Broker
	mu       sync.Mutex
	pulls    []equeue.PullRequest
	answered []weak.Pointer[byte] // the bodies answered, by their first byte
	sizes    []int
	held     int // the most bytes of earlier bodies held at a call
}

// listingCall records what the console still holds of earlier answers.
func (b *heldBroker) listingCall() {
	runtime.GC()
	n := 0
	for i, p := range b.answered {
		if p.Value() != nil {
			n += b.sizes[i]
		}
	}
	b.held = max(b.held, n)
}

// own gives m a body of its own, watched by b.
func (b *heldBroker) own(m *equeue.Message) *equeue.Message {
	cp := *m
	cp.Body = append([]byte(nil), m.Body...)
	if len(cp.Body) > 0 {
		b.answered = append(b.answered, weak.Make(&cp.Body[0]))
		b.sizes = append(b.sizes, len(cp.Body))
	}
	return &cp
}

func (b *heldBroker) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pulls = append(b.pulls, *req)
	if req.Max == 1 {
		return b.Broker.Pull(ctx, req) // a single message, not a listing
	}
	b.listingCall()
	r := *req
	r.Max = 2
	res, err := b.Broker.Pull(ctx, &r)
	for i, m := range res.Messages {
		res.Messages[i] = b.own(m)
	}
	return res, err
}

func (b *heldBroker) DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.listingCall()
	es, err := b.Broker.DeadLetters(ctx, group, from, min(max, 2))
	for i := range es {
		es[i].Message = b.own(es[i].Message)
	}
	return es, err
}

// sendBack has a member of group pull the n messages of topic's single
// queue and send each back, as a failing handler would, or to the dead
// letters.
func sendBack(t *testing.T, e *equeue.Engine, group, topic string, n int, deadLetter bool) {
	t.Helper()
	ctx := ctxT(t)
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: group, Member: "m1", Subscriptions: []equeue.Subscription{{Topic: topic}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	grant := a.Queues[0]
	for off := 0; off < n; {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: grant.Queue, Offset: int64(off), Group: group, Member: "m1", Epoch: grant.Epoch})
		require.NoError(t, err)
		require.NotEmpty(t, res.Messages)
		for _, m := range res.Messages {
			_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: group, Member: "m1", Grant: grant, Offset: m.Offset, Attempts: 1, Cause: "down", DeadLetter: deadLetter})
			require.NoError(t, err)
			off++
		}
	}
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: group, Member: "m1"}))
}

// bigBody is the body of message i of the listing tests: 64 KiB of
// two-byte runes after an 11-byte head, so that a row's head ends inside a
// rune.
func bigBody(i int) []byte {
	return []byte(fmt.Sprintf("message %d: ", i) + strings.Repeat("é", 32<<10))
}

// bigPreview is bigBody(i)'s preview: its first 80 runes.
func bigPreview(i int) string {
	return string([]rune(string(bigBody(i)))[:80]) + "…"
}

// The list pages bound each pull (PullRequest.MaxBytes) and keep only the
// head of each body: once the console pulls on, it holds no body it was
// answered before, on the message list, a key search, the retries and the
// dead letters.
func TestListing_BoundsPullsAndHoldsNoBodyOncePulledOn(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "big", 1))
	const n = 6
	for i := range n {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "big", Messages: []*equeue.Message{{Keys: []string{"k"}, Body: bigBody(i)}}})
		require.NoError(t, err)
	}
	sendBack(t, e, "retrying", "big", n, false)
	sendBack(t, e, "dead", "big", n, true)
	eventually(t, 10*time.Second, func() bool {
		ti, err := e.Topic(ctx, equeue.RetryTopic("retrying"))
		dl, dlErr := e.ListDeadLetters(ctx, "dead", equeue.ListDeadLettersRequest{Max: 10})
		return err == nil && len(ti.Queues) > 0 && ti.Queues[0].MaxOffset == n && dlErr == nil && len(dl) == n
	}, "the messages reached the retry topic and the dead letters")

	b := &heldBroker{Broker: e}
	s := serve(t, b, console.Options{})
	for _, p := range []string{"topics/big/messages?count=6", "topics/big/messages?key=k", "groups/retrying/retry", "groups/dead/dlq"} {
		b.mu.Lock()
		b.pulls, b.answered, b.sizes, b.held = nil, nil, nil, 0
		b.mu.Unlock()
		pg := s.get(t, prefix+p)
		require.Equal(t, http.StatusOK, pg.status, "%s: %s", p, pg.body)
		for i := range n {
			assert.Contains(t, pg.body, bigPreview(i), "%s: message %d's preview", p, i)
		}
		b.mu.Lock()
		assert.Zero(t, b.held, "%s: bytes of bodies answered before that the console held at a later call", p)
		for _, r := range b.pulls {
			assert.Equal(t, console.ListPullBytes, r.MaxBytes, "%s: a listing pull's MaxBytes", p)
		}
		b.mu.Unlock()
	}
}

// A message larger than a listing pull's bound is read by itself: it is
// listed, found by a search and shown on its page, in-process and over
// remote.
func TestListing_MessageLargerThanThePullBoundIsListed(t *testing.T) {
	ctx := ctxT(t)
	e, err := equeue.Open("", &equeue.Options{InMemory: true, MaxMessageSize: console.ListPullBytes + 1<<20})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "big", 1))
	big := append([]byte("the big one "), make([]byte, console.ListPullBytes)...)
	for i := range big[12:] {
		big[12+i] = 'b'
	}
	for _, body := range [][]byte{[]byte("before"), big, []byte("after")} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "big", Messages: []*equeue.Message{{Keys: []string{"k"}, Body: body}}})
		require.NoError(t, err)
	}

	srv, err := remote.NewServer(e, &remote.ServerOptions{MaxMessageBytes: 2 * console.ListPullBytes})
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-served })
	cl, err := remote.Dial(lis.Addr().String(), &remote.ClientOptions{MaxMessageBytes: 2 * console.ListPullBytes})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })

	for name, br := range map[string]console.Broker{"inproc": e, "remote": cl} {
		t.Run(name, func(t *testing.T) {
			b := &heldBroker{Broker: br}
			s := serve(t, b, console.Options{})
			for _, p := range []string{"topics/big/messages", "topics/big/messages?key=k"} {
				b.mu.Lock()
				b.pulls = nil
				b.mu.Unlock()
				pg := s.get(t, prefix+p)
				require.Equal(t, http.StatusOK, pg.status, "%s: %s", p, pg.body)
				assert.Contains(t, pg.body, ">before<", p)
				assert.Contains(t, pg.body, "the big one bbbb", p)
				assert.Contains(t, pg.body, "8.0 MiB", "%s: the big one's size", p)
				assert.Contains(t, pg.body, ">after<", p)
				b.mu.Lock()
				assert.Contains(t, b.pulls, equeue.PullRequest{Topic: "big", Offset: 1, Max: 1}, "%s: the big one read by itself", p)
				b.mu.Unlock()
			}
			pg := s.get(t, prefix+"topics/big/messages/0/1")
			require.Equal(t, http.StatusOK, pg.status, pg.body)
			assert.Contains(t, pg.body, "the big one bbbb")
			assert.Contains(t, pg.body, "Only the first 64 KiB")
		})
	}
}

// A row keeps a copy of the head of its body, and the body's size.
func TestListed_KeepsACopyOfTheHeadOfTheBody(t *testing.T) {
	m := &equeue.Message{ID: "id", Body: bigBody(1)}
	row := console.Listed(m)
	require.Equal(t, console.PreviewBytes, len(row.M.Body), "bytes of the body the row keeps")
	assert.Equal(t, len(bigBody(1)), row.Size)
	assert.Equal(t, "id", row.M.ID)
	assert.Equal(t, bigPreview(1), row.Preview)
	m.Body[0] = 'M'
	assert.Equal(t, byte('m'), row.M.Body[0], "the row's head is a copy")
	assert.Equal(t, len(bigBody(1)), len(m.Body), "the message keeps its body")
}

// The preview of a head that ends inside a rune is text, and says the body
// goes on; a binary head and a short body are previewed as before.
func TestPreview_HeadCutInsideARune(t *testing.T) {
	body := []byte("naïve café " + strings.Repeat("é", 100))
	head := body[:len("naïve caf")+1] // the first byte of "é"
	require.False(t, utf8.Valid(head))
	assert.Equal(t, "naïve caf…", console.Preview(head, len(body)))
	assert.Equal(t, "(3 bytes, binary)", console.Preview([]byte{0xff, 0xfe, 0x00}, 3))
	assert.Equal(t, "(300 bytes, binary)", console.Preview([]byte{0xff, 0xfe, 0x00}, 300))
	assert.Equal(t, "a b", console.Preview([]byte(" a \n b "), 7))
	assert.Equal(t, "a…", console.Preview([]byte("a "), 7))
}

// A search returns at most 100 matches, though one pull reads more, and
// says where it stopped.
func TestListing_SearchReturnsAtMostAHundredMatches(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "many", 1))
	msgs := make([]*equeue.Message, 150)
	for i := range msgs {
		msgs[i] = &equeue.Message{Keys: []string{"k"}, Body: []byte(fmt.Sprintf("match %d", i))}
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "many", Messages: msgs})
	require.NoError(t, err)
	s := serve(t, e, console.Options{})
	pg := s.get(t, prefix+"topics/many/messages?key=k")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	head := pg.body[strings.Index(pg.body, "<h2>"):]
	head = head[:strings.Index(head, "</p>")]
	assert.Contains(t, head, "100 found")
	assert.Contains(t, head, "queue 0 offsets 0–100", "the search says where it stopped")
	assert.Contains(t, head, "Incomplete result")
}
