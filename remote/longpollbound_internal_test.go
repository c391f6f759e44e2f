package remote

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/stats"

	"github.com/equeue-go/equeue"
)

// TestClient_LongPollBoundFollowsTheToldCap: a long-poll call may take its
// wait plus the slack while the client knows no cap of the engine (before
// a join's answer, or from a server of an older version, which tells
// none); once an answer told the engine's MaxPullWait, a longer wait
// counts as the cap, a shorter one as itself, until an answer tells none
// or a new connection begins: the cap is then unknown again, and an
// answer still arriving over the connection before tells nothing.
func TestClient_LongPollBoundFollowsTheToldCap(t *testing.T) {
	c := &Client{told: new(toldLimits)}
	c.slack.Store(int64(longPollSlack))
	assert.Equal(t, time.Minute+longPollSlack, c.callBound(time.Minute), "no cap told")
	c.learnLimits(nil, equeue.Assignment{SessionTimeout: time.Second})
	assert.Equal(t, time.Minute+longPollSlack, c.callBound(time.Minute), "an answer without a cap (an older server)")
	c.learnLimits(nil, equeue.Assignment{MaxPullWait: 15 * time.Second})
	assert.Equal(t, 15*time.Second+longPollSlack, c.callBound(time.Minute), "a wait past the cap")
	assert.Equal(t, 2*time.Second+longPollSlack, c.callBound(2*time.Second), "a wait within the cap")
	assert.Equal(t, longPollSlack, c.callBound(0), "no wait")
	c.learnLimits(nil, equeue.Assignment{})
	assert.Equal(t, time.Minute+longPollSlack, c.callBound(time.Minute), "a later answer without a cap (an older server)")
	c.learnLimits(nil, equeue.Assignment{MaxPullWait: 15 * time.Second})
	h := sentStats{told: c.told}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
	h.HandleConn(h.TagConn(context.Background(), &stats.ConnTagInfo{LocalAddr: local}), &stats.ConnBegin{Client: true})
	assert.Equal(t, time.Minute+longPollSlack, c.callBound(time.Minute), "a new connection")
	c.learnLimits(nil, equeue.Assignment{MaxPullWait: 15 * time.Second})
	assert.Equal(t, time.Minute+longPollSlack, c.callBound(time.Minute), "an answer over the connection before")
	c.learnLimits(local, equeue.Assignment{MaxPullWait: 15 * time.Second})
	assert.Equal(t, 15*time.Second+longPollSlack, c.callBound(time.Minute), "an answer over the new connection")
}
