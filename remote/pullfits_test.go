package remote_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// longFields is a message with the longest ID a producer may set and long
// keys and tag, all kept in its record.
func longFields(i int, body []byte) *equeue.Message {
	return &equeue.Message{ID: fmt.Sprintf("%0*d", equeue.MaxIDBytes, i), Tag: strings.Repeat("g", 1000),
		Keys: []string{strings.Repeat("k", 1000), strings.Repeat("l", 1000)}, Body: body}
}

// bigClient is a plain gRPC client of addr that receives answers of up to
// limit bytes, as a remote.Client with that MaxMessageBytes does.
func bigClient(t *testing.T, addr string, limit int) pb.BrokerClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(limit)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return pb.NewBrokerClient(cc)
}

// pullAnswer pulls from off of queue 0 of "t" as a client with the given
// answer limit, with Pull or PullMany, asking for stored batches of
// version (0: messages), and returns the answer and its encoded size.
func pullAnswer(t *testing.T, api pb.BrokerClient, many bool, version int32, off int64, limit int) (*pb.PullResponse, int, error) {
	t.Helper()
	ctx := ctxT(t)
	req := &pb.PullRequest{Topic: "t", Offset: off, Max: equeue.MaxPullBatch, StoredBatchVersion: version}
	if !many {
		req.MaxAnswerBytes = int32(limit)
		resp, err := api.Pull(ctx, req)
		return resp, proto.Size(resp), err
	}
	resp, err := api.PullMany(ctx, &pb.PullManyRequest{MaxAnswerBytes: int32(limit), Pulls: []*pb.PullRequest{req}})
	if err != nil {
		return nil, 0, err
	}
	require.Len(t, resp.GetItems(), 1)
	if pe := resp.GetItems()[0].GetError(); pe != nil {
		return nil, 0, fmt.Errorf("%s: %s", pe.GetReasons(), pe.GetMessage())
	}
	return resp.GetItems()[0].GetResponse(), proto.Size(resp), nil
}

// remoteMessages are the messages of a pull answer, as a client decodes
// them.
func remoteMessages(resp *pb.PullResponse) ([]*equeue.Message, error) {
	res, err := remote.PullResultFromPB(resp)
	return res.Messages, err
}

// pullWays are the ways a client pulls: Pull and PullMany, answered with a
// stored batch or with messages (an older client's, a namespace's).
var pullWays = []struct {
	name    string
	many    bool
	version int32
}{
	{"Pull/stored", false, equeue.StoredBatchVersion}, {"Pull/messages", false, 0},
	{"PullMany/stored", true, equeue.StoredBatchVersion}, {"PullMany/messages", true, 0},
}

// Messages with the longest IDs a producer may set, long keys and a long
// tag (all kept in their records, which the server's bound counts) are
// pulled within the client's limit, every answer of them, whichever way
// it pulls: none refused, none lost, in order.
func TestPull_LongestIDsKeysAndTagsFitTheLimit(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const n = 300
	for i := range n {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{longFields(i, []byte("b"))}})
		require.NoError(t, err)
	}
	s := startServer(t, e, "", nil)
	for _, limit := range []int{100 << 10, 1 << 20} {
		api := bigClient(t, s.addr, limit)
		for _, way := range pullWays {
			t.Run(fmt.Sprint(way.name, "/", limit), func(t *testing.T) {
				for off := int64(0); off < n; {
					resp, size, err := pullAnswer(t, api, way.many, way.version, off, limit)
					require.NoError(t, err, "offset %d", off)
					assert.LessOrEqual(t, size, limit)
					msgs, err := remoteMessages(resp)
					require.NoError(t, err)
					require.NotEmpty(t, msgs, "offset %d", off)
					for i, m := range msgs {
						require.Equal(t, off+int64(i), m.Offset)
						require.Equal(t, longFields(int(m.Offset), nil).ID, m.ID)
					}
					off = resp.GetNextOffset()
				}
			})
		}
	}
}

// A message whose answer fits the client's limit is pulled, whichever way
// the client pulls, however little room it leaves for the rest of the
// answer; only one whose answer cannot fit is ErrMessageTooLarge. The
// server used to ask the engine for 64 KiB less than the limit, so a
// message within 64 KiB of it (and every message, with a limit below 64
// KiB) was refused as too large, and a Consumer moved it to its dead
// letters, though the client could receive it.
func TestPull_AMessageWhoseAnswerFitsIsNotTooLarge(t *testing.T) {
	for _, limit := range []int{48 << 10, 256 << 10} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			fits := longFields(0, bytes.Repeat([]byte("f"), limit-8<<10))
			tooLarge := longFields(1, bytes.Repeat([]byte("L"), limit))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{fits, tooLarge}})
			require.NoError(t, err)
			s := startServer(t, e, "", nil)
			api := bigClient(t, s.addr, limit)
			for _, way := range pullWays {
				resp, size, err := pullAnswer(t, api, way.many, way.version, 0, limit)
				require.NoError(t, err, way.name)
				assert.LessOrEqual(t, size, limit, way.name)
				msgs, err := remoteMessages(resp)
				require.NoError(t, err)
				if assert.Len(t, msgs, 1, way.name) {
					assert.Equal(t, fits.ID, msgs[0].ID, way.name)
					assert.Equal(t, fits.Body, msgs[0].Body, way.name)
				}
				assert.Equal(t, int64(1), resp.GetNextOffset(), way.name)
				_, _, err = pullAnswer(t, api, way.many, way.version, 1, limit)
				require.ErrorContains(t, err, "message too large", way.name)
			}
		})
	}
}

// A remote consumer whose client's limit holds a message, with its
// longest ID, keys and tag, handles it intact and once, and the message
// after it once: it is not taken for one too large and moved to the
// group's dead letters. An orderly consumer handles the two in offset
// order; a concurrent one promises no order between them (its workers
// finish messages in any order), so none is asserted there: the test used
// to expect the large one first in that mode too, and failed now and then
// when the small one's worker reached its handler first.
func TestConsumer_HandlesAMessageCloseToItsClientsLimit(t *testing.T) {
	for _, orderly := range []bool{false, true} {
		t.Run(fmt.Sprint("orderly=", orderly), func(t *testing.T) {
			const limit = 256 << 10
			ctx := ctxT(t)
			e := openEngine(t, nil)
			s := startServer(t, e, "", nil)
			c := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: limit})
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			large := longFields(0, bytes.Repeat([]byte("f"), limit-8<<10))
			large.Topic = "t"
			_, err := newProducer(t, c).Send(ctx, large)
			require.NoError(t, err)
			_, err = newProducer(t, c).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("after")})
			require.NoError(t, err)
			h := &handledLog{}
			cons := startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				From: equeue.ConsumeFromEarliest, Orderly: orderly, Handler: h.handle})
			deadLetters := func() []equeue.DLQEntry {
				dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				return dls
			}
			eventually(t, 30*time.Second, func() bool { return h.len() >= 2 || len(deadLetters()) > 0 },
				"the consumer handled %d of 2 messages", func() any { return h.len() })
			require.NoError(t, cons.Close())
			require.Empty(t, deadLetters(), "nothing went to the dead letters")
			got := h.all()
			require.Len(t, got, 2, "each message is handled once")
			if !orderly {
				slices.SortFunc(got, func(a, b *equeue.Message) int { return cmp.Compare(a.Offset, b.Offset) })
			}
			assert.Equal(t, []int64{0, 1}, []int64{got[0].Offset, got[1].Offset}, "offsets handled")
			assert.Equal(t, large.ID, got[0].ID)
			assert.Equal(t, large.Tag, got[0].Tag)
			assert.Equal(t, large.Keys, got[0].Keys)
			assert.True(t, bytes.Equal(large.Body, got[0].Body), "the large message's body is handled intact")
			assert.Equal(t, "after", string(got[1].Body))
		})
	}
}

// handledLog records the messages a handler got, in the order it got them.
type handledLog struct {
	mu   sync.Mutex
	msgs []*equeue.Message
}

func (h *handledLog) handle(_ context.Context, m *equeue.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, m)
	return nil
}

func (h *handledLog) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs)
}

func (h *handledLog) all() []*equeue.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}
