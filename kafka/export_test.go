package kafka

import "time"

// BrokerID is brokerID, for tests outside the package.
var BrokerID = brokerID

// SetEmptyGroupKeep sets how long empty classic groups are kept, until the
// test ends.
func SetEmptyGroupKeep(t interface{ Cleanup(func()) }, d time.Duration) {
	old := emptyGroupKeep
	emptyGroupKeep = d
	t.Cleanup(func() { emptyGroupKeep = old })
}
