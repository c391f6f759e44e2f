package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Every scheduled job is stored as delayed and delivered once, and the run
// closes what it opened without an error. (The order of the deliveries
// follows their delays, which a loaded machine may blur: not checked.)
func TestDelayed_EveryJobIsDeliveredOnce(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	for _, job := range []string{"send the weekly digest", "remind about the cart", "expire the trial"} {
		assert.Contains(t, out.String(), `scheduled "`+job+`"`, job)
		assert.Equal(t, 1, strings.Count(out.String(), "delivered "+job+" "), job)
	}
	assert.Equal(t, 3, strings.Count(out.String(), "(delayed=true)"), out.String())
}
