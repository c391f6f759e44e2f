package equeue

// recordsChecker is a store whose Read returns each record out of a unit
// it checked against a checksum of its own covering the record whole
// (store.Badger's segments). A record's own checksum then says nothing
// more, and the engine's pulls skip it: a CRC-32C of every message read
// was about 4% of a consumer's CPU. Other stores, and wrappers of a
// checking store that do not pass the method on, have each record
// checked.
type recordsChecker interface {
	RecordsChecked() bool
}

// checksRecords reports whether st is a recordsChecker that checks.
func checksRecords(st Store) bool {
	c, ok := st.(recordsChecker)
	return ok && c.RecordsChecked()
}
