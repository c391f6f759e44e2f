package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The example reports the jobs topic's six queues, not the group's retry
// topic as a seventh, and every job handled.
func TestWorkqueue_CountsTheJobsTopicQueues(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	assert.Contains(t, out.String(), `group "resizers": 6 queues of topic jobs, lag 0`)
	assert.Equal(t, 3, bytes.Count(out.Bytes(), []byte(" handled ")), out.String())
}
