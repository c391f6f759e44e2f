package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A malformed --token is refused without printing the token: serve's
// errors go to stderr and into logs, and the other --token errors mask it.
func TestParseTokens_ErrorsHideTheToken(t *testing.T) {
	const secret = "s3cret-0123456789"
	for _, spec := range []string{secret, secret + "=", secret + "=bogus", secret + "=all@bad:ns"} {
		_, err := parseTokens(flagTokenSpecs([]string{spec}))
		if err == nil {
			_, err = parseTokenNamespaces(flagTokenSpecs([]string{spec}))
		}
		require.Error(t, err, spec)
		assert.NotContains(t, err.Error(), secret[:8], "the error names the token")
	}
}
