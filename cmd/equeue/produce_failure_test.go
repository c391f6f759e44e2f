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
		assert.Contains(t, r.stderr, "message 2: message too large")
		printed := strings.Count(r.stdout, "offset=")

		stored := bodies(jsonLines[messageJSON](t, ok(t, with("peek", "lines", "--output", "json")...)))
		assert.Equal(t, []string{"first"}, stored, "lines after the refused one are not sent")
		assert.Equal(t, len(stored), printed, "every stored message is printed:\n%s", r.stdout)
	})
}
