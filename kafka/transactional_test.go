package kafka_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestFindCoordinator_TransactionsRefusedForGood: the listener offers no
// transactions, so a transaction coordinator lookup is refused
// INVALID_REQUEST, which clients do not retry, as InitProducerId with a
// transactional ID is: a transactional client learns at once that it
// cannot work here, instead of retrying COORDINATOR_NOT_AVAILABLE until
// its own timeout and then failing with a code that blames a passing
// unavailability. Group lookups are still answered.
func TestFindCoordinator_TransactionsRefusedForGood(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)

	for _, v := range []int16{3, 4} {
		// Up to v3 one key, answered in the response; from v4 a list.
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(kmsg.FindCoordinator.Int16(), v)
		raw := kclient(t, addr, kgo.MaxVersions(versions))
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 1, "tx", []string{"tx"}
		resp, err := raw.Broker(0).Request(ctx, req)
		require.NoError(t, err, "v%d", v)
		fr := resp.(*kmsg.FindCoordinatorResponse)
		require.Equal(t, v, fr.GetVersion())
		code, node := fr.ErrorCode, fr.NodeID
		if v >= 4 {
			require.Len(t, fr.Coordinators, 1)
			code, node = fr.Coordinators[0].ErrorCode, fr.Coordinators[0].NodeID
		}
		assert.Equal(t, kerr.InvalidRequest.Code, code, "v%d: INVALID_REQUEST", v)
		assert.Equal(t, int32(-1), node, "v%d: no coordinator named", v)
	}

	// A franz-go transactional producer fails its records with the
	// refusal, well before the retry timeout it was given (the test's
	// context, a minute, ends first otherwise).
	cl := kclient(t, addr, kgo.TransactionalID("tx"), kgo.RetryTimeout(time.Hour), kgo.TransactionTimeout(time.Hour))
	err := cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr()
	}
	require.Error(t, err)
	assert.True(t, errors.Is(err, kerr.InvalidRequest), "refused for good, not retried: %v", err)
	require.NoError(t, ctx.Err(), "the client gave up before the test's bound")
}
