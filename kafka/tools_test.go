package kafka_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// needTool returns the path of a command-line client, skipping the test
// when it is missing outside CI and failing it in CI (where .ci/run
// installs it).
func needTool(t *testing.T, path string, check ...string) string {
	t.Helper()
	p, err := exec.LookPath(path)
	if err == nil && len(check) > 0 {
		err = exec.Command(p, check...).Run()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is needed in CI (.ci/run installs it): %v", path, err)
		}
		t.Skipf("%s not available: %v", path, err)
	}
	return p
}

func run(ctx context.Context, t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(t, err, "%s %v: %s", name, args, stderr)
	return string(out)
}

// TestKcat_LZ4ProduceAndBalancedGroup: kcat (librdkafka) produces with lz4
// and consumes with a balanced consumer group, which commits its offsets.
func TestKcat_LZ4ProduceAndBalancedGroup(t *testing.T) {
	kcat := needTool(t, "kcat", "-V")
	e, addr := setup(t, map[string]int{"kc": 3})
	ctx := testCtx(t)
	var in strings.Builder
	var want []string
	for i := range 30 {
		fmt.Fprintf(&in, "key%d:value %d compressible compressible compressible\n", i, i)
		want = append(want, fmt.Sprintf("key%d=value %d compressible compressible compressible", i, i))
	}
	run(ctx, t, in.String(), kcat, "-b", addr, "-P", "-t", "kc", "-K:", "-z", "lz4", "-X", "linger.ms=50")
	n := 0
	ti, err := e.Topic(ctx, "kc")
	require.NoError(t, err)
	for _, q := range ti.Queues {
		n += int(q.MaxOffset)
	}
	require.Equal(t, 30, n)

	out := run(ctx, t, "", kcat, "-b", addr, "-G", "kcg", "-X", "auto.offset.reset=earliest", "-c", "30", "-f", "%k=%s\n", "-q", "kc")
	got := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got)
	offs, err := e.GroupOffsets(ctx, "kcg")
	require.NoError(t, err)
	total := int64(0)
	for ref, off := range offs {
		assert.Equal(t, "kc", ref.Topic)
		total += off
	}
	assert.Equal(t, int64(30), total, "the group committed everything it read")
	// Messages are stored as sent: first key, body.
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "kc", Queue: 0, Offset: 0, Max: 100})
	require.NoError(t, err)
	for _, m := range res.Messages {
		assert.True(t, strings.HasPrefix(m.Keys[0], "key"))
		assert.Contains(t, string(m.Body), "compressible")
	}
}

// TestPython_ConfluentKafka: the Python client (confluent-kafka over
// librdkafka) produces with zstd and an idempotent producer, then consumes
// with a group both its own messages and ones a native producer sent, byte
// for byte, and commits.
func TestPython_ConfluentKafka(t *testing.T) {
	py := needTool(t, "/usr/bin/python3", "-c", "import confluent_kafka")
	e, addr := setup(t, map[string]int{"py": 2})
	ctx := testCtx(t)
	native := [][]byte{{0, 1, 2, 255}, []byte("native body"), {}}
	for _, b := range native {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "py", Queue: 1, Messages: []*equeue.Message{{Keys: []string{"nat"}, Body: b}}})
		require.NoError(t, err)
	}
	out := run(ctx, t, "", py, "testdata/confluent_client.py", addr, "py", "pyg", "20", "23")
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("py-%d\t%x", i, fmt.Sprintf("python %d", i)))
	}
	for _, b := range native {
		want = append(want, fmt.Sprintf("nat\t%x", b))
	}
	got := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got)
	// The Python messages are stored with their key, body and header.
	for q := range 2 {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "py", Queue: q, Offset: 0, Max: 100})
		require.NoError(t, err)
		for _, m := range res.Messages {
			if m.Keys[0] != "nat" {
				assert.Equal(t, map[string]string{"src": "py"}, m.Properties)
			}
		}
	}
	offs, err := e.GroupOffsets(ctx, "pyg")
	require.NoError(t, err)
	assert.Equal(t, int64(23), offs[equeue.QueueRef{Topic: "py", Queue: 0}]+offs[equeue.QueueRef{Topic: "py", Queue: 1}])
}
