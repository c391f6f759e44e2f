package remote

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// syncAppender is a Client or a ClusterClient, for an Append from one of
// its callbacks.
type syncAppender interface {
	reentryClient
	Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error)
}

// A synchronous Append called from an AppendAsync callback that ran on
// the goroutine reading the stream's answers went on that stream and
// waited for its answer, which only that goroutine could read: it waited
// until its context ended, the answer unread. It now goes as a unary
// call, which no goroutine of the client has to read for it.
func TestAppend_FromACallbackOnTheStreamsReaderIsAnswered(t *testing.T) {
	for name, dial := range map[string]func(t *testing.T, addr string) syncAppender{
		"Client": func(t *testing.T, addr string) syncAppender {
			c, err := Dial(addr, nil)
			require.NoError(t, err)
			return c
		},
		"ClusterClient": func(t *testing.T, addr string) syncAppender {
			cc, err := DialCluster([]string{addr}, nil)
			require.NoError(t, err)
			cc.redirect(addr, addr)
			return cc
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := openTopicEngine(t)
			l := &leaderless{}
			l.elected.Store(true)
			c := dial(t, serveLeaderless(t, e, l))
			defer func() { require.NoError(t, c.Close()) }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			got := make(chan error, 1)
			c.AppendAsync(ctx, reentryReq, func(_ equeue.AppendResult, err error) {
				if err != nil {
					got <- err
					return
				}
				// A bounded wait: without the fix, the error is its context's.
				short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
				defer cancelShort()
				_, err = c.Append(short, reentryReq)
				got <- err
			})
			require.NoError(t, within(t, got, "the Append from the callback"))
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Max: 10})
			require.NoError(t, err)
			assert.Len(t, res.Messages, 2, "both appends stored, once each")
		})
	}
}
