package remote_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A client with a small answer limit (below the server's 64 KiB slack for
// a full batch's framing) still gets batches, not one message per pull
// (the server read within 1 byte for it, then each first message alone);
// and a message too large for it is refused naming the client's limit,
// not the server's inner read bound (which was 1 byte for such a client).
func TestPull_ASmallClientLimitGetsBatchesAndIsNamedInRefusals(t *testing.T) {
	const limit = 32 << 10
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	msgs := make([]*equeue.Message, 20)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: bytes.Repeat([]byte{'a' + byte(i)}, 1000)}
	}
	msgs = append(msgs, &equeue.Message{Body: bytes.Repeat([]byte("L"), 2*limit)})
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	s := startServer(t, e, "", nil)
	api := bigClient(t, s.addr, limit)
	said := regexp.MustCompile(`accepts at most (\d+)`)
	for _, way := range pullWays {
		t.Run(way.name, func(t *testing.T) {
			pulls := 0
			for off := int64(0); off < 20; pulls++ {
				resp, size, err := pullAnswer(t, api, way.many, way.version, off, limit)
				require.NoError(t, err)
				assert.LessOrEqual(t, size, limit)
				got, err := remoteMessages(resp)
				require.NoError(t, err)
				require.NotEmpty(t, got)
				for _, m := range got {
					require.Equal(t, off, m.Offset)
					require.Equal(t, msgs[off].Body, m.Body)
					off++
				}
			}
			assert.LessOrEqual(t, pulls, 2, "20 messages of 1 KB take at most two answers of 32 KiB, not one each")
			_, _, err = pullAnswer(t, api, way.many, way.version, 20, limit)
			require.ErrorContains(t, err, "message too large")
			m := said.FindStringSubmatch(err.Error())
			require.NotNil(t, m, err.Error())
			n, _ := strconv.Atoi(m[1])
			assert.Greater(t, n, limit/2, fmt.Sprintf("the refusal names about the client's limit: %v", err))
			assert.LessOrEqual(t, n, limit)
		})
	}
}
