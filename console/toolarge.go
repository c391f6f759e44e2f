package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/equeue-go/equeue"
)

// Over a *remote.Client, a message larger than the client's receive limit
// (its MaxMessageBytes) cannot be read: the broker answers a pull that
// reaches it with an equeue.MessageTooLargeError naming its offset. The
// console lists such a message as a row with only its offset, goes on past
// it, and its page says what is known of it.

// tooLargeInfo is what the message page shows of a message too large to
// read: its stored size (0 when not known) and the limit it does not fit.
type tooLargeInfo struct {
	Size, Limit int
}

// tooLarge returns the equeue.MessageTooLargeError of err, the error of a
// read from offset from, when it names a message from there on that the
// broker cannot answer within the client's receive limit; else nil.
func tooLarge(err error, from int64) *equeue.MessageTooLargeError {
	var big *equeue.MessageTooLargeError
	if errors.As(err, &big) && big.Offset >= from {
		return big
	}
	return nil
}

// tooLargeRow is the row of a message of topic's queue q at offset off that
// the broker cannot answer (see pullList): only where it is is known.
func tooLargeRow(topic string, q int, off int64) messageRow {
	return messageRow{M: &equeue.Message{Topic: topic, Queue: q, Offset: off}, TooLarge: true}
}

// tooLargePage answers the page of the message at offset off of topic's
// queue q when big, the error of reading it, says the broker cannot
// answer it: the page shows where it is, its size and who consumed it.
// When the message that does not fit is a later one, off holds none.
func (c *Console) tooLargePage(ctx context.Context, w http.ResponseWriter, r *http.Request, v viewer, topic string, q int, off int64, big *equeue.MessageTooLargeError) {
	if big.Offset != off {
		c.fail(w, r, v, http.StatusNotFound, "Message not found", fmt.Sprintf("Queue %d of %s holds no message at offset %d (the next one, at offset %d, is too large for this console's client).", q, topic, off, big.Offset))
		return
	}
	progress, err := c.progress(ctx, topic)
	if err != nil {
		c.brokerFail(w, r, v, "listing groups", err)
		return
	}
	info := &tooLargeInfo{Size: big.Size, Limit: big.Limit}
	if info.Size == 0 {
		info.Size = c.storedSize(ctx, topic, q, off)
	}
	d := messageData{M: &equeue.Message{Topic: topic, Queue: q, Offset: off}, TooLarge: info, Progress: progress[equeue.QueueRef{Topic: topic, Queue: q}]}
	c.render(w, r, v, http.StatusOK, "message", fmt.Sprintf("Message %s/%d@%d", topic, q, off), d)
}

// storedSize asks the broker for the stored size of the message at offset
// off of topic's queue q, which it cannot answer: a pull bounded to one
// byte fails with an error that names it. It returns 0 when not known.
func (c *Console) storedSize(ctx context.Context, topic string, q int, off int64) int {
	_, err := c.b.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: 1, MaxBytes: 1})
	var big *equeue.MessageTooLargeError
	if errors.As(err, &big) && big.Offset == off {
		return big.Size
	}
	return 0
}
