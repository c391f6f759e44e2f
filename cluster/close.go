package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/equeue-go/equeue"
)

// Close stops serving, leaves Raft running no more, and closes the stores.
// It does not remove the node from the cluster (see RemoveServer). A
// leader that cannot commit (cut off from its followers, or refused by
// them) closes too: Close waits a little for what it has on its way
// (closeDrain), and a write still on its way then ends with an error
// matching equeue.ErrIndeterminate. Idempotent: it is
// CloseContext(context.Background()).
func (n *Node) Close() error { return n.CloseContext(context.Background()) }

// errCloseStopped is what Close and CloseContext return once the node's
// close stopped before it finished: it panicked, the panic going on to the
// goroutine that ran it. Raft and the stores may be neither shut down nor
// closed.
var errCloseStopped = errors.New("cluster: the close stopped before it finished (it panicked): Raft and the stores may be neither shut down nor closed")

// CloseContext is Close that waits for the close only until ctx ends, as
// equeue.Engine.CloseContext. The first call of Close or CloseContext
// starts the close; every call waits for that same close and returns its
// result. When ctx ends first (a store that does not answer: a hung disk
// holds the leader's engine, the FSM or Raft's shutdown), CloseContext
// returns at once an error matching equeue.ErrCloseAbandoned and ctx's
// error, and the close goes on in the background until the store answers:
// until then the node's directory stays locked by this process, and a
// later Close waits for the close and returns its result. With a ctx that
// never ends (context.Background) it is Close.
//
// Abandoning the close loses nothing the node acknowledged: a write it
// answered is in the Raft log of a majority of the voters, and a host that
// exits then leaves the directory to be recovered by the next Open, as
// after a crash.
//
// A nil ctx or node returns equeue.ErrInvalidArgument and closes nothing.
func (n *Node) CloseContext(ctx context.Context) error {
	if n == nil {
		return fmt.Errorf("%w: nil node", equeue.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", equeue.ErrInvalidArgument)
	}
	return n.closer.Wait(ctx, n.shutdown, errCloseStopped, equeue.ErrCloseAbandoned)
}
