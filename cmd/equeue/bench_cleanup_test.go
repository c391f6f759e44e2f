package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBench_ConsumersLeaveNoGroupBehind: bench --consumers on a directory
// (or a server) of the user's deletes its consumer group with the topic,
// so no group of a benchmark that is over stays in "groups" and "stats";
// with --keep the group stays with the topic.
func TestBench_ConsumersLeaveNoGroupBehind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bench := []string{"--dir", dir, "bench", "--json", "--count", "200", "--consumers", "2", "--sync", "never", "--baseline=false"}
	b := decode[benchJSON](t, ok(t, bench...))
	require.NotNil(t, b.Consume)
	require.Equal(t, int64(200), b.Consume.Messages)
	assert.Empty(t, decode[[]topicJSON](t, ok(t, "--dir", dir, "topic", "list", "--json")), "bench left topics")
	assert.Empty(t, decode[[]groupJSON](t, ok(t, "--dir", dir, "groups", "--json")), "bench left its consumer group")

	// --keep keeps the topic and the group that consumed it.
	b = decode[benchJSON](t, ok(t, append(bench, "--keep")...))
	require.NotNil(t, b.Consume)
	groups := decode[[]groupJSON](t, ok(t, "--dir", dir, "groups", "--json"))
	require.Len(t, groups, 1)
	assert.True(t, strings.HasPrefix(groups[0].Name, "bench-"), groups[0].Name)
	var names []string
	for _, tp := range decode[[]topicJSON](t, ok(t, "--dir", dir, "topic", "list", "--json")) {
		names = append(names, tp.Name)
	}
	assert.ElementsMatch(t, []string{b.Topic, "%RETRY%" + groups[0].Name}, names)
}
