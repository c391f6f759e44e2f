package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A line the broker refuses stops produce there, over a directory as over
// a server: no line after it is stored, and every stored line was printed.
func TestProduce_RefusedLineStopsTheInput(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		with := func(args ...string) []string { return append(append([]string{}, at...), args...) }
		ok(t, with("topic", "create", "lines", "--queues", "1")...)
		// The middle line fits a line (8 MiB) but not a message (4 MiB).
		input := "first\n" + strings.Repeat("x", 5<<20) + "\nafter\n"
		file := filepath.Join(t.TempDir(), "lines.txt")
		require.NoError(t, os.WriteFile(file, []byte(input), 0o600))

		r := cli(t, with("produce", "lines", "--file", file)...)
		require.Equal(t, 1, r.code, r.String())
		assert.Contains(t, r.stderr, "line 2: message too large")
		printed := strings.Count(r.stdout, "offset=")

		stored := bodies(jsonLines[messageJSON](t, ok(t, with("peek", "lines", "--output", "json")...)))
		assert.Equal(t, []string{"first"}, stored, "lines after the refused one are not sent")
		assert.Equal(t, len(stored), printed, "every stored message is printed:\n%s", r.stdout)
	})
}

// A refused line is named by its line number in the input (empty lines
// count), with what became of it and of the lines before it.
func TestProduce_RefusedLineIsNamedByItsLineNumber(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		with := func(args ...string) []string { return append(append([]string{}, at...), args...) }
		ok(t, with("topic", "create", "lines", "--queues", "1")...)
		input := "first\n\nsecond\n" + strings.Repeat("x", 5<<20) + "\nafter\n"
		file := filepath.Join(t.TempDir(), "lines.txt")
		require.NoError(t, os.WriteFile(file, []byte(input), 0o600))

		for _, r := range []result{cli(t, with("produce", "lines", "--file", file)...), cliIn(t, input, with("produce", "lines")...)} {
			require.Equal(t, 1, r.code, r.String())
			assert.Contains(t, r.stderr, "equeue: line 4: message too large")
			assert.Contains(t, r.stderr, "line 4 was not stored; the 2 messages before it were stored (printed on stdout); no line after it was sent")
			assert.Equal(t, 2, strings.Count(r.stdout, "offset="), r.stdout)
		}
		// A line longer than a line may be is named too.
		r0 := cliIn(t, "ok\n"+strings.Repeat("y", maxLine+1)+"\n", with("produce", "lines")...)
		require.Equal(t, 1, r0.code, r0.String())
		assert.Contains(t, r0.stderr, "equeue: read input: line 2 is longer than 8388608 bytes")
		assert.Equal(t, 1, strings.Count(r0.stdout, "offset="), r0.stdout)
		// Arguments are named by their place (in this process: the
		// argument is longer than one the system passes to a process).
		r := runBounded(t, nil, with("produce", "lines", "a", strings.Repeat("x", 5<<20))...)
		require.Equal(t, 1, r.code, r.String())
		assert.Contains(t, r.stderr, "equeue: message 2: message too large")
		assert.Contains(t, r.stderr, "message 2 was not stored; the 1 message before it was stored (printed on stdout)")
	})
}
