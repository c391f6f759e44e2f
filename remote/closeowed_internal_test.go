package remote

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A Close called from a callback returns before the close is done, so it
// cannot return the close's error: that error was dropped. The first
// Close called from elsewhere afterwards now returns it, and later ones
// nil.
func TestClose_FromACallbackOwesTheCloseErrorToTheNextClose(t *testing.T) {
	for name, dial := range reentryClients() {
		t.Run(name, func(t *testing.T) {
			addr, _ := serveFake(t, firstAnsweredBroker{})
			c := dial(t, addr)
			closed := make(chan error, 1)
			c.AppendAsync(context.Background(), reentryReq, func(_ equeue.AppendResult, err error) {
				require.NoError(t, err)
				// The connection is closed already: closing it again, the
				// close fails.
				require.NoError(t, connOf(t, c).Close())
				closed <- c.Close()
			})
			require.NoError(t, within(t, closed, "Close from the callback"), "it returns before the close is done")
			err := within(t, closeAsync(c), "Close after the callback")
			require.Error(t, err, "the close's error, owed by the Close from the callback")
			require.ErrorContains(t, err, "closing")
			require.NoError(t, within(t, closeAsync(c), "a later Close"), "owed once")
		})
	}
}

// connOf is the connection c's appends go on (a ClusterClient's: its
// leader's).
func connOf(t *testing.T, c reentryClient) interface{ Close() error } {
	switch c := c.(type) {
	case *Client:
		return c.conn
	case *ClusterClient:
		c.mu.Lock()
		defer c.mu.Unlock()
		n := c.clients[c.leader]
		require.NotNil(t, n, "the leader's node")
		return n.c.conn
	}
	t.Fatalf("unknown client %T", c)
	return nil
}
