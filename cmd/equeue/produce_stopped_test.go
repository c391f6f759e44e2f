package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProduce_StoppedMidStreamReportsWhatWasStored: a produce on a
// directory stopped while its sends are in flight (here by --timeout, as
// by Ctrl-C or SIGTERM) prints every message that was stored and says
// "not stored" of none that was: the engine writes every send it took
// whatever the command's context, so the command waits for those
// outcomes instead of taking the context's end for a refusal. Before,
// the send at the head of the pipeline and the up to 255 behind it were
// reported "not stored" (and not printed) while the engine stored them,
// and a script sending again what was not stored sent them twice.
func TestProduce_StoppedMidStreamReportsWhatWasStored(t *testing.T) {
	t.Parallel()
	input := filepath.Join(t.TempDir(), "lines.txt")
	var b strings.Builder
	for i := range 300000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	require.NoError(t, os.WriteFile(input, []byte(b.String()), 0o600))

	stoppedEarly := 0
	for round := range 3 {
		dir := t.TempDir()
		ok(t, "--dir", dir, "topic", "create", "t", "--queues", "4")
		r := cli(t, "--dir", dir, "produce", "t", "--file", input, "--timeout", "300ms")
		if r.code == 0 {
			continue // the whole file went in before the timeout: nothing was stopped
		}
		stoppedEarly++
		require.Equal(t, 1, r.code, "round %d: %v", round, r)
		printed := strings.Count(r.stdout, "\n")
		stored := decode[topicJSON](t, ok(t, "--dir", dir, "topic", "describe", "t", "--json")).Messages
		assert.Equal(t, stored, int64(printed), "round %d: the engine stored %d messages, the produce printed %d as stored; stderr:\n%s", round, stored, printed, r.stderr)
	}
	require.Positive(t, stoppedEarly, "no round was stopped before the end of its input")
}
