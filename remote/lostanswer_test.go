package remote_test

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestClient_ResendOfAnAppendWhoseAnswerWasLostIsStoredOnce: the server
// is stopped (its connections cut) while the engine writes a send, which
// is then stored: the client reports the send unknown (ErrIndeterminate)
// and never sends it again by itself. Sent again by the application with
// its ID, to a topic with a dedup window, it is a duplicate at the
// original's offset, stored once, by Send (a unary call) and SendAsync (the
// append stream). The client gives no ID to a message sent without one
// (the engine does, as it stores it), so such a message sent again is a
// new one: stored twice.
func TestClient_ResendOfAnAppendWhoseAnswerWasLostIsStoredOnce(t *testing.T) {
	for _, async := range []bool{false, true} {
		name := "Send"
		if async {
			name = "SendAsync"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			fs := faultstore.New(store.NewMemory())
			e := openEngine(t, &equeue.Options{Store: fs})
			require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			s := startServer(t, e, "", nil)
			c := dial(t, s.addr, nil)
			p := newProducer(t, c)
			send := func(m *equeue.Message) (equeue.SendResult, error) {
				if async {
					return p.SendAsync(ctx, m).Result(ctx)
				}
				return p.Send(ctx, m)
			}

			// lost sends m while the server is stopped with m's write
			// held, and returns the client's answer once m is stored.
			lost := func(m *equeue.Message) error {
				in, held := make(chan struct{}), make(chan struct{})
				var once sync.Once
				fs.OnWrite(func(b *store.Batch) error {
					if slices.ContainsFunc(b.Entries, func(en store.Entry) bool { return bytes.Contains(en.Value, m.Body) }) {
						once.Do(func() { close(in); <-held })
					}
					return nil
				})
				defer fs.OnWrite(nil)
				answered := make(chan error, 1)
				go func() {
					_, err := send(m)
					answered <- err
				}()
				<-in
				stopped := make(chan struct{})
				go func() { s.stop(); close(stopped) }()
				err := <-answered
				close(held)
				<-stopped
				eventually(t, 10*time.Second, func() bool { return storedBodies(t, e, "t")[string(m.Body)] }, "the held send stored")
				s = startServer(t, e, s.addr, nil)
				return err
			}

			err := lost(&equeue.Message{Topic: "t", ID: "x", Body: []byte("with an ID")})
			require.ErrorIs(t, err, equeue.ErrIndeterminate, "the answer was lost")
			res, err := send(&equeue.Message{Topic: "t", ID: "x", Body: []byte("with an ID")})
			require.NoError(t, err)
			assert.True(t, res.Duplicate)
			assert.Equal(t, int64(0), res.Offset)

			err = lost(&equeue.Message{Topic: "t", Body: []byte("without an ID")})
			require.ErrorIs(t, err, equeue.ErrIndeterminate, "the answer was lost")
			res, err = send(&equeue.Message{Topic: "t", Body: []byte("without an ID")})
			require.NoError(t, err)
			assert.False(t, res.Duplicate, "a message without an ID is a new one")
			assert.Equal(t, int64(2), res.Offset)

			var bodies []string
			pulled, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
			require.NoError(t, err)
			for _, m := range pulled.Messages {
				bodies = append(bodies, string(m.Body))
			}
			assert.Equal(t, []string{"with an ID", "without an ID", "without an ID"}, bodies,
				"the client sent nothing again by itself")
		})
	}
}
