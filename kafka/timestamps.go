package kafka

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// errBadTimestamp is returned for a record whose timestamp a message's
// BornAt cannot hold, and for a batch whose producer set its timestamp
// type to LogAppendTime: Kafka's INVALID_TIMESTAMP, which clients do not
// retry, for the whole batch.
var errBadTimestamp = errors.New("kafka: invalid record timestamp")

// noTimestamp is Kafka's RecordBatch.NO_TIMESTAMP: the record has none.
const noTimestamp = -1

var (
	// bornMin and bornMax bound, in Unix milliseconds, the timestamps a
	// message's BornAt holds: the engine keeps it in int64 Unix
	// nanoseconds, 1677-09-21 to 2262-04-11.
	bornMin = time.Unix(0, math.MinInt64).UnixMilli() + 1
	bornMax = time.Unix(0, math.MaxInt64).UnixMilli()
)

// recordBornAt is the BornAt of record i of a batch whose first timestamp
// is first and the record's delta is delta. Kafka's "no timestamp" (-1)
// and 0 are the zero time, which the engine fills in with the time of the
// append: a BornAt cannot hold the Unix epoch itself (it reads back as
// unset), and clients that set no time send either. A sum that overflows
// and a time outside bornMin..bornMax wrap errBadTimestamp: storing them
// would keep another time than the one sent.
func recordBornAt(i int32, first, delta int64) (time.Time, error) {
	ts := first + delta
	if (delta > 0 && ts < first) || (delta < 0 && ts > first) {
		return time.Time{}, fmt.Errorf("%w: record %d: first timestamp %d plus delta %d overflows", errBadTimestamp, i, first, delta)
	}
	switch {
	case ts == noTimestamp, ts == 0:
		return time.Time{}, nil
	case ts < bornMin || ts > bornMax:
		return time.Time{}, fmt.Errorf("%w: record %d: timestamp %d ms is outside %d..%d (1677-09-21..2262-04-11)", errBadTimestamp, i, ts, bornMin, bornMax)
	}
	return time.UnixMilli(ts), nil
}
