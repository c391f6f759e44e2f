package remote

import "sync"

// owedErr holds the error of a close that a Close called from a callback
// began and could not wait for (the close waits for the callback to
// return): the next Close called from elsewhere, which waits for the
// close to be done, returns it, and later ones nil.
type owedErr struct {
	mu  sync.Mutex
	err error
}

// owe keeps err for the next take.
func (o *owedErr) owe(err error) {
	o.mu.Lock()
	o.err = err
	o.mu.Unlock()
}

// take returns the error kept, once.
func (o *owedErr) take() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.err
	o.err = nil
	return err
}
