package remote

import (
	"errors"
	"strconv"

	"github.com/equeue-go/equeue"
)

// Where a message too large for the client is: ErrorInfo metadata keys.
const (
	mdTopic  = "topic"
	mdQueue  = "queue"
	mdOffset = "offset"
	mdLimit  = "limit"
	mdSize   = "size"
)

// addTooLarge records in md where the message of an
// equeue.MessageTooLargeError is, so the client can rebuild it.
func addTooLarge(err error, md map[string]string) {
	var big *equeue.MessageTooLargeError
	if !errors.As(err, &big) {
		return
	}
	md[mdTopic] = big.Topic
	md[mdQueue] = strconv.Itoa(big.Queue)
	md[mdOffset] = strconv.FormatInt(big.Offset, 10)
	md[mdLimit] = strconv.Itoa(big.Limit)
	md[mdSize] = strconv.Itoa(big.Size)
}

// tooLargeFrom rebuilds the equeue.MessageTooLargeError recorded in md, or
// returns nil.
func tooLargeFrom(md map[string]string) *equeue.MessageTooLargeError {
	off, err := strconv.ParseInt(md[mdOffset], 10, 64)
	if err != nil {
		return nil
	}
	q, qerr := strconv.Atoi(md[mdQueue])
	limit, lerr := strconv.Atoi(md[mdLimit])
	if qerr != nil || lerr != nil || md[mdTopic] == "" {
		return nil
	}
	size, _ := strconv.Atoi(md[mdSize])
	return &equeue.MessageTooLargeError{QueueRef: equeue.QueueRef{Topic: md[mdTopic], Queue: q}, Offset: off, Size: size, Limit: limit}
}
