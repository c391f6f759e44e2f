package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve --help says what --cluster-salt does now: a node first started
// with a secret and no salt refuses one later, and a salt ending with a
// newline is refused. Before, it said only that a node keeps its salt
// and refuses another.
func TestServeHelp_ClusterSaltSaysAnUnsaltedNodeRefusesOne(t *testing.T) {
	t.Parallel()
	help := ok(t, "serve", "--help")
	var line string
	for _, l := range strings.Split(help, "\n") {
		if strings.Contains(l, "--cluster-salt ") {
			line = l
		}
	}
	require.NotEmpty(t, line, "%s", help)
	assert.Contains(t, line, "first started without one refuses it", "%s", line)
	assert.Contains(t, line, "not end with a newline", "%s", line)
}
