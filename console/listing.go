package console

import (
	"bytes"
	"context"
	"errors"

	"github.com/equeue-go/equeue"
)

// The list pages (messages, search results, retries, dead letters) show a
// short preview of each body, and the console runs in its host's process.
// So a listing's pulls are bounded (listPullBytes) and its rows keep only
// the head of each body (previewBytes) and the body's size: a page of 500
// rows of 4 MiB bodies holds 500 KiB of bodies, not 2 GB.

// listPullBytes bounds the stored size of the messages one pull of a
// listing returns (PullRequest.MaxBytes): 8 MiB, about the most a remote
// client accepts in one answer by default.
const listPullBytes = 8 << 20

// previewBytes is how much of each body a listed row keeps: the preview's
// 80 runes of up to 4 bytes, with room for the white space it folds.
const previewBytes = 1 << 10

// listPull is what one pull of a listing read.
type listPull struct {
	equeue.PullResult
	// TooLarge, when not negative, is the offset of a message the broker
	// could not answer within the client's receive limit (a remote
	// client's MaxMessageBytes). It comes alone: Messages is empty and
	// NextOffset is past it.
	TooLarge int64
}

// pullList is a listing's pull of req, bounded by listPullBytes. When the
// first message alone is larger than that, it reads that message by
// itself, without the bound, so that it is listed too. A message that the
// broker cannot answer even so names its offset in its error (an
// equeue.MessageTooLargeError): it comes back as listPull.TooLarge, so that
// a listing shows it by its offset and goes on past it.
func (c *Console) pullList(ctx context.Context, req equeue.PullRequest) (listPull, error) {
	req.MaxBytes = listPullBytes
	res, err := c.b.Pull(ctx, &req)
	if errors.Is(err, equeue.ErrMessageTooLarge) {
		req.Max, req.MaxBytes = 1, 0
		res, err = c.b.Pull(ctx, &req)
	}
	if big := tooLarge(err, req.Offset); big != nil {
		return listPull{PullResult: equeue.PullResult{NextOffset: big.Offset + 1}, TooLarge: big.Offset}, nil
	}
	return listPull{PullResult: res, TooLarge: -1}, err
}

// listed is the row of a listed message: the message with only the head
// of its body (bodyHead), the preview of that head, and the body's size.
func listed(m *equeue.Message) messageRow {
	h := bodyHead(m)
	return messageRow{M: h, Preview: preview(h.Body, len(m.Body)), Size: len(m.Body)}
}

// bodyHead returns a copy of m whose Body is a copy of at most the first
// previewBytes of m's body, so that neither the rest of the body nor the
// read buffer it may be a slice of stays held.
func bodyHead(m *equeue.Message) *equeue.Message {
	h := *m
	h.Body = bytes.Clone(m.Body[:min(len(m.Body), previewBytes)])
	return &h
}
