// Package closephase lets package cluster run the first phase of an
// engine's close on its own, before the rest of the close: package equeue
// sets CloseClients when it loads. It is not part of the API.
package closephase

// CloseClients closes the consumers and producers opened in-process on e,
// an *equeue.Engine, as the engine's Close does first (the consumers'
// final commits and leaves, then the groups' starts kept in memory), and
// returns what failed. The engine stays open: its Close later closes the
// clients opened since, and does the rest.
var CloseClients func(e any) error
