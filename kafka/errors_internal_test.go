package kafka

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/equeue-go/equeue"
)

// A cluster node that does not lead answers NOT_LEADER_OR_FOLLOWER, which
// Kafka clients retry, not a storage error.
func TestErrorCode_NotLeader(t *testing.T) {
	err := fmt.Errorf("append: %w", equeue.ErrNotLeader)
	assert.Equal(t, errNotLeaderOrFollower, errorCode(err))
	assert.Equal(t, int16(6), errorCode(err))
	assert.Equal(t, errKafkaStorageError, errorCode(equeue.ErrIndeterminate))
}
