package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

// bigMessages are three messages of topic "big" (one queue), the middle
// one larger than answerLimit.
type bigMessages struct {
	e        *equeue.Engine
	smallIDs []string
	bigID    string
	bigAt    time.Time // when the large one was stored
}

// bigMessageOffset is the large message's offset in queue 0 of "big".
const bigMessageOffset = 1

func seedBigMessage(t *testing.T) bigMessages {
	t.Helper()
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "big", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	d := bigMessages{e: e}
	for i, body := range []string{"small one", strings.Repeat("x", 2*answerLimit), "small two"} {
		r, err := p.Send(ctx, &equeue.Message{Topic: "big", Keys: []string{"k"}, Body: []byte(body)})
		require.NoError(t, err)
		require.Equal(t, int64(i), r.Offset)
		if i == bigMessageOffset {
			d.bigID = r.ID
		} else {
			d.smallIDs = append(d.smallIDs, r.ID)
		}
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "big", Offset: bigMessageOffset, Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	d.bigAt = res.Messages[0].StoredAt
	return d
}

// smallClient is a remote client of e that cannot receive the large message.
func smallClient(t *testing.T, e *equeue.Engine) *remote.Client {
	return dialRemote(t, e, &remote.ClientOptions{MaxMessageBytes: answerLimit})
}

// TestConsole_MessagesTooLargeForTheClient browses a queue through a remote
// client that cannot receive one of its messages: every page that reaches
// it lists the others and shows that one as a row by its offset.
func TestConsole_MessagesTooLargeForTheClient(t *testing.T) {
	d := seedBigMessage(t)
	s := serve(t, smallClient(t, d.e), console.Options{})
	row := fmt.Sprintf(`id="too-large-%d"`, bigMessageOffset)

	pg := s.get(t, prefix+"topics/big/messages")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, "small one", "the messages that fit are listed")
	assert.Contains(t, pg.body, "small two")
	assert.Contains(t, pg.body, row, "the large one has a row")
	assert.Contains(t, pg.body, "too large to show")

	// A page that starts at the large one goes on past it.
	pg = s.get(t, prefix+fmt.Sprintf("topics/big/messages?queue=0&from=%d&count=1", bigMessageOffset))
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, row)
	assert.Contains(t, pg.body, fmt.Sprintf("from=%d&count=1", bigMessageOffset+1), "the next page starts past it")

	// Browsing by time, from the large one's time: the page reaches it.
	pg = s.get(t, prefix+"topics/big/messages?at="+url.QueryEscape(d.bigAt.UTC().Format(time.RFC3339Nano)))
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, row)
	assert.Contains(t, pg.body, "small two")
}

// TestConsole_SearchPassesAMessageTooLargeForTheClient searches by ID and
// key through a client that cannot receive one message: the others are
// found, and the result says that one could not be searched.
func TestConsole_SearchPassesAMessageTooLargeForTheClient(t *testing.T) {
	d := seedBigMessage(t)
	s := serve(t, smallClient(t, d.e), console.Options{})
	row := fmt.Sprintf(`id="too-large-%d"`, bigMessageOffset)

	pg := s.get(t, prefix+"topics/big/messages?id="+d.smallIDs[1])
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, "1 found")
	assert.Contains(t, pg.body, "small two")
	assert.Contains(t, pg.body, row, "the large one is listed as not searched")
	assert.Contains(t, pg.body, `id="incomplete"`, "a result that could not read a message is incomplete")

	// The large one's own ID is not found, but it is listed.
	pg = s.get(t, prefix+"topics/big/messages?id="+d.bigID)
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, "0 found")
	assert.Contains(t, pg.body, row)
	assert.Contains(t, pg.body, "1 message(s) too large for this console's client could not be searched")

	pg = s.get(t, prefix+"topics/big/messages?key=k")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, "2 found")
	assert.Contains(t, pg.body, "small one")
	assert.Contains(t, pg.body, "small two")
	assert.Contains(t, pg.body, row)
}

// TestConsole_MessagePageTooLargeForTheClient opens the page of a message
// the client cannot receive: it says so, with the sizes, and what is known.
func TestConsole_MessagePageTooLargeForTheClient(t *testing.T) {
	d := seedBigMessage(t)
	s := serve(t, smallClient(t, d.e), console.Options{})

	pg := s.get(t, prefix+fmt.Sprintf("topics/big/messages/0/%d", bigMessageOffset))
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, "too large for this console's client")
	sizes := regexp.MustCompile(`\((\d+) bytes, limit (\d+)\)`).FindStringSubmatch(pg.body)
	require.NotNil(t, sizes, "the sizes are named")
	size, _ := strconv.Atoi(sizes[1])
	limit, _ := strconv.Atoi(sizes[2])
	assert.Greater(t, size, 2*answerLimit, "the stored size, body and all")
	// The broker names the bound it read with, which is not above the
	// client's limit.
	assert.Positive(t, limit)
	assert.LessOrEqual(t, limit, answerLimit)
	assert.Contains(t, pg.body, fmt.Sprintf("big/0 @ %d", bigMessageOffset))

	// The messages beside it show as ever.
	pg = s.get(t, prefix+fmt.Sprintf("topics/big/messages/0/%d", bigMessageOffset+1))
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, d.smallIDs[1])
}

// TestConsole_RetryPagePassesAMessageTooLargeForTheClient lists a retry
// topic that holds a message the client cannot receive.
func TestConsole_RetryPagePassesAMessageTooLargeForTheClient(t *testing.T) {
	d := seedBigMessage(t)
	ctx := ctxT(t)
	a, err := d.e.JoinGroup(ctx, &equeue.JoinRequest{Group: "workers", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "big"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	grant := a.Queues[0]
	res, err := d.e.Pull(ctx, &equeue.PullRequest{Topic: "big", Queue: grant.Queue, Group: "workers", Member: "m1", Epoch: grant.Epoch, Max: 3})
	require.NoError(t, err)
	require.Len(t, res.Messages, 3)
	for off := range int64(3) {
		_, err = d.e.SendBack(ctx, &equeue.SendBackRequest{Group: "workers", Member: "m1", Grant: grant, Offset: off, Attempts: 1, Cause: "failed"})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool {
		ti, err := d.e.Topic(ctx, equeue.RetryTopic("workers"))
		return err == nil && len(ti.Queues) > 0 && ti.Queues[0].MaxOffset == 3
	}, "the three reached the retry topic")

	s := serve(t, smallClient(t, d.e), console.Options{})
	pg := s.get(t, prefix+"groups/workers/retry")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, "small one")
	assert.Contains(t, pg.body, "small two")
	assert.Contains(t, pg.body, fmt.Sprintf(`id="too-large-%d"`, bigMessageOffset))
}

// tooLargeBroker answers every topic with a broker's too-large error.
type tooLargeBroker struct{ console.Broker }

func (tooLargeBroker) Topic(context.Context, string) (equeue.TopicInfo, error) {
	return equeue.TopicInfo{}, &equeue.MessageTooLargeError{QueueRef: equeue.QueueRef{Topic: "big"}, Offset: 7, Limit: answerLimit}
}

// TestConsole_TooLargeIsNotABrokerFailure: a page that meets a message the
// client cannot receive says so, not that the broker failed.
func TestConsole_TooLargeIsNotABrokerFailure(t *testing.T) {
	s := serve(t, tooLargeBroker{openEngine(t)}, console.Options{})
	pg := s.get(t, prefix+"topics/big")
	assert.Equal(t, http.StatusRequestEntityTooLarge, pg.status, pg.body)
	assert.NotContains(t, pg.body, "The broker failed")
	assert.Contains(t, pg.body, "Too large for this console&#39;s client")
}

// sizelessBroker answers a pull of the large message as a remote broker
// does when the message fits its bound but not the answer: with an error
// that names the limit, not the size.
type sizelessBroker struct{ console.Broker }

func (b sizelessBroker) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if req.Offset == bigMessageOffset && req.MaxBytes == 0 {
		return equeue.PullResult{}, &equeue.MessageTooLargeError{QueueRef: equeue.QueueRef{Topic: req.Topic, Queue: req.Queue}, Offset: bigMessageOffset, Limit: answerLimit}
	}
	return b.Broker.Pull(ctx, req)
}

// TestConsole_MessagePageAsksTheSizeOfATooLargeMessage: when the error
// does not name the message's size, the page asks the broker for it.
func TestConsole_MessagePageAsksTheSizeOfATooLargeMessage(t *testing.T) {
	d := seedBigMessage(t)
	s := serve(t, sizelessBroker{d.e}, console.Options{})
	pg := s.get(t, prefix+fmt.Sprintf("topics/big/messages/0/%d", bigMessageOffset))
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	sizes := regexp.MustCompile(`\((\d+) bytes, limit (\d+)\)`).FindStringSubmatch(pg.body)
	require.NotNil(t, sizes, "the sizes are named")
	size, _ := strconv.Atoi(sizes[1])
	assert.Greater(t, size, 2*answerLimit)
	assert.Equal(t, strconv.Itoa(answerLimit), sizes[2])
}
