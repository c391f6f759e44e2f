package equeue

import (
	"errors"
	"fmt"

	"github.com/equeue-go/equeue/internal/closephase"
)

func init() {
	closephase.CloseClients = func(x any) error {
		e, ok := x.(*Engine)
		if !ok || e == nil {
			return fmt.Errorf("%w: not an engine", ErrInvalidArgument)
		}
		return e.closeClients()
	}
}

// closeClients is the first phase of Close: it closes the consumers (their
// final commits and leaves) and producers opened on e in-process, then
// stores the groups' starts kept in memory, while the store still takes
// writes, and returns what failed. A cluster node runs it before it fences
// the store of its leader's engine on an orderly close; Close runs it
// again (what was opened since). On a closed engine it does nothing.
func (e *Engine) closeClients() error {
	if e.closed.Load() {
		return nil
	}
	return errors.Join(e.clients.closeAll(), e.storeKeptStarts())
}
