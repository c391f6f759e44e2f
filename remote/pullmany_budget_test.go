package remote_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The pulls of one PullMany call share the client's answer limit. A pull
// whose first message no longer fits in what the earlier pulls left is
// answered "nothing new" for now (its next call starts with the whole
// limit), not with ErrMessageTooLarge: the message fits the client's
// limit, and the error would make its consumer take it for one that never
// does.
func TestPullMany_APullPastTheSharedBudgetWaitsForTheNextCall(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	small := bytes.Repeat([]byte("s"), 1<<10)
	for range 15 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{{Body: small}}})
		require.NoError(t, err)
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: bytes.Repeat([]byte("L"), 8<<10)}}})
	require.NoError(t, err)
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 2)
	s := startServer(t, e, "", nil)
	raw := rawClient(t, s.addr)

	pulls := make([]*pb.PullRequest, 2)
	for _, g := range a.Queues {
		pulls[g.Queue] = &pb.PullRequest{Topic: "t", Queue: int32(g.Queue), Max: 32, Group: "g", Member: "m", Epoch: g.Epoch}
	}
	// A limit under twice the 64 KiB slack keeps half of it for the
	// messages (20 KiB here): the 15 small messages fit, the large one
	// alone fits the whole limit, not after them.
	const limit = 40 << 10
	resp, err := raw.PullMany(ctx, &pb.PullManyRequest{Pulls: pulls, MaxAnswerBytes: limit})
	require.NoError(t, err)
	require.Len(t, resp.GetItems(), 2)
	require.Nil(t, resp.GetItems()[0].GetError())
	assert.Len(t, resp.GetItems()[0].GetResponse().GetMessages(), 15)
	require.Nil(t, resp.GetItems()[1].GetError(), "the large message fits a call of its own")
	assert.Equal(t, pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, resp.GetItems()[1].GetResponse().GetStatus())
	assert.Equal(t, int64(0), resp.GetItems()[1].GetResponse().GetNextOffset(), "its position stays")

	// The next call, with queue 0 past its messages, carries it.
	pulls[0].Offset = 15
	resp, err = raw.PullMany(ctx, &pb.PullManyRequest{Pulls: pulls, MaxAnswerBytes: limit})
	require.NoError(t, err)
	require.Nil(t, resp.GetItems()[1].GetError())
	r := resp.GetItems()[1].GetResponse()
	assert.Equal(t, pb.PullStatus_PULL_STATUS_FOUND, r.GetStatus())
	assert.Equal(t, int64(1), r.GetNextOffset())
}

// Answers of pulls that found nothing take room in the shared answer too.
// A pull whose first message fits the client's limit, but not what the
// empty answers of the pulls before it left, must still be answered with
// it: deferring it to the next call defers it for ever, as that call holds
// the same empty answers before it. (100 empty answers leave the large
// message too little of the room for messages; 1,000 leave none.)
func TestPullMany_APullBehindEmptyAnswersIsNotDeferredForEver(t *testing.T) {
	for _, empties := range []int{100, 1000} {
		t.Run(fmt.Sprint(empties), func(t *testing.T) { pullBehindEmptyAnswers(t, empties) })
	}
}

func pullBehindEmptyAnswers(t *testing.T, empties int) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: bytes.Repeat([]byte("L"), 8<<10)}}})
	require.NoError(t, err)
	s := startServer(t, e, "", nil)
	raw := rawClient(t, s.addr)

	// Pulls of the empty queue 0, then the pull of queue 1; the client's
	// limit leaves 12 KiB for messages.
	pulls := make([]*pb.PullRequest, 0, empties+1)
	for range empties {
		pulls = append(pulls, &pb.PullRequest{Topic: "t", Queue: 0, Max: 32})
	}
	pulls = append(pulls, &pb.PullRequest{Topic: "t", Queue: 1, Max: 32})
	const limit = 64<<10 + 12<<10
	for call := range 3 {
		resp, err := raw.PullMany(ctx, &pb.PullManyRequest{Pulls: pulls, MaxAnswerBytes: limit})
		require.NoError(t, err)
		require.Len(t, resp.GetItems(), empties+1)
		item := resp.GetItems()[empties]
		require.Nil(t, item.GetError(), "the large message fits the client's limit")
		if item.GetResponse().GetStatus() == pb.PullStatus_PULL_STATUS_FOUND {
			assert.Len(t, item.GetResponse().GetMessages(), 1)
			assert.Equal(t, int64(1), item.GetResponse().GetNextOffset())
			assert.LessOrEqual(t, proto.Size(resp), limit)
			return
		}
		t.Logf("call %d: the pull of queue 1 answered %v at offset %d", call, item.GetResponse().GetStatus(), item.GetResponse().GetNextOffset())
	}
	t.Fatal("the message that fits the client's limit was never answered: every call defers it behind the same empty answers")
}

// A pull whose first message fits the client's limit alone, but not what
// the empty answers of the pulls before it left, is answered "nothing
// new" at its offset for now, as when earlier answers carry messages: it
// was an ErrMessageTooLarge item, which a Consumer takes for a message
// that never fits and moves to its dead letters. A call that leaves it
// the room delivers it; only a message that cannot fit the limit even
// alone is an error item.
func TestPullMany_AMessageThatFitsAloneWaitsBehindEmptyAnswers(t *testing.T) {
	addr := serveOneLargeMessage(t)
	raw := rawClient(t, addr)
	for _, version := range []int32{0, equeue.StoredBatchVersion} {
		t.Run(fmt.Sprint("version ", version), func(t *testing.T) {
			big := &pb.PullRequest{Topic: "t", Queue: 1, Max: 32, StoredBatchVersion: version}
			least := leastLimitAlone(t, raw, big)

			// Behind 20 empty answers (of the empty queue 0) it does not fit.
			pulls := make([]*pb.PullRequest, 0, 21)
			for range 20 {
				pulls = append(pulls, &pb.PullRequest{Topic: "t", Queue: 0, Max: 32, StoredBatchVersion: version})
			}
			pulls = append(pulls, big)
			item := pullManyWithin(t, raw, least, pulls...).GetItems()[20]
			require.Nil(t, item.GetError(), "the message fits the client's limit alone")
			assert.Equal(t, pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, item.GetResponse().GetStatus())
			assert.Equal(t, int64(0), item.GetResponse().GetNextOffset(), "its position stays")

			// A byte less, it cannot fit even alone: that is an error,
			// wherever the pull is.
			for _, i := range []int{0, 20} {
				ps := append([]*pb.PullRequest(nil), pulls...)
				ps[i], ps[20] = ps[20], ps[i]
				pe := pullManyWithin(t, raw, least-1, ps...).GetItems()[i].GetError()
				require.NotNil(t, pe, "pull %d", i)
				assert.Contains(t, pe.GetReasons(), "MESSAGE_TOO_LARGE", "pull %d", i)
			}
		})
	}
}

// serveOneLargeMessage serves an engine whose topic "t" has an empty queue
// 0 and one message of 100 KiB in queue 1, and returns its address.
func serveOneLargeMessage(t *testing.T) string {
	t.Helper()
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: bytes.Repeat([]byte("L"), 100<<10)}}})
	require.NoError(t, err)
	return startServer(t, e, "", nil).addr
}

// pullManyWithin makes a PullMany call of pulls with the client's limit
// and checks that its answer has an item per pull, within the limit.
func pullManyWithin(t *testing.T, raw pb.BrokerClient, limit int, pulls ...*pb.PullRequest) *pb.PullManyResponse {
	t.Helper()
	resp, err := raw.PullMany(ctxT(t), &pb.PullManyRequest{Pulls: pulls, MaxAnswerBytes: int32(limit)})
	require.NoError(t, err)
	require.Len(t, resp.GetItems(), len(pulls))
	assert.LessOrEqual(t, proto.Size(resp), limit, "the answer passes the client's limit")
	return resp
}

// leastLimitAlone is the least client limit with which a PullMany call of
// pull alone delivers pull's first message, which it checks.
func leastLimitAlone(t *testing.T, raw pb.BrokerClient, pull *pb.PullRequest) int {
	t.Helper()
	resp := pullManyWithin(t, raw, 1<<20, pull)
	require.Nil(t, resp.GetItems()[0].GetError())
	answer := proto.Size(resp.GetItems()[0].GetResponse())
	least := answer
	for resp = pullManyWithin(t, raw, least, pull); resp.GetItems()[0].GetError() != nil; resp = pullManyWithin(t, raw, least, pull) {
		require.Less(t, least, answer+1024, "%v", resp.GetItems()[0].GetError())
		least++
	}
	msgs, err := remoteMessages(resp.GetItems()[0].GetResponse())
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	return least
}

// The items of the pulls after one whose message took what the answer had
// left were not counted: an answer of the message near the client's limit
// and 20 pulls after it passed the limit, and the client's gRPC refused the
// whole call (ResourceExhausted), every pull of it with it. Error items
// were not counted either: 200 pulls of a topic that does not exist passed
// a limit of 8 KiB. Every item is now counted, and the answer keeps room
// for those of the pulls after each one; a pull left no room for its item
// is answered "nothing new" for now.
func TestPullMany_TheAnswerNeverPassesTheClientsLimit(t *testing.T) {
	addr := serveOneLargeMessage(t)
	raw := rawClient(t, addr)
	for _, version := range []int32{0, equeue.StoredBatchVersion} {
		t.Run(fmt.Sprint("version ", version), func(t *testing.T) {
			big := &pb.PullRequest{Topic: "t", Queue: 1, Max: 32, StoredBatchVersion: version}
			least := leastLimitAlone(t, raw, big)
			pulls := []*pb.PullRequest{big}
			for range 20 {
				pulls = append(pulls, &pb.PullRequest{Topic: "t", Queue: 0, Max: 32, StoredBatchVersion: version})
			}
			for _, limit := range []int{least, least + 64, least + 1024} {
				// A client that receives no more than its limit, as a
				// remote.Client does.
				for i, item := range pullManyWithin(t, bigClient(t, addr, limit), limit, pulls...).GetItems() {
					require.Nil(t, item.GetError(), "limit %d, pull %d", limit, i)
				}
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		pulls := make([]*pb.PullRequest, 200)
		for i := range pulls {
			pulls[i] = &pb.PullRequest{Topic: "none", Max: 32}
		}
		items := pullManyWithin(t, bigClient(t, addr, 8<<10), 8<<10, pulls...).GetItems()
		require.NotNil(t, items[0].GetError())
		assert.Contains(t, items[0].GetError().GetReasons(), "TOPIC_NOT_FOUND")
	})
}
