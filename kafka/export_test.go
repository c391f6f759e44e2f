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

// SetMaxTimestampPulls sets the pulls one ListOffsets request makes for
// MAX_TIMESTAMP in a queue, until the test ends.
func SetMaxTimestampPulls(t interface{ Cleanup(func()) }, n int) {
	old := maxTimestampPulls
	maxTimestampPulls = n
	t.Cleanup(func() { maxTimestampPulls = old })
}
