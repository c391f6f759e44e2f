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

// A token with white space at either end is refused: a client's token
// reaches the server trimmed, so it could never match.
func TestParseTokens_WhiteSpaceAroundATokenIsRefused(t *testing.T) {
	for _, spec := range []string{"s3cret =produce", " s3cret=produce", "s3cret\t=all"} {
		_, err := parseTokens(flagTokenSpecs([]string{spec}))
		require.Error(t, err, spec)
		assert.Contains(t, err.Error(), "white space", spec)
		assert.NotContains(t, err.Error(), "s3cret", "the error names the token")
	}
	toks, err := parseTokens(flagTokenSpecs([]string{"s3cret=produce"}))
	require.NoError(t, err)
	assert.Contains(t, toks, "s3cret")
}

// A token holding a control or non-ASCII character is refused: no client
// could send it in a header.
func TestParseTokens_UnsendableCharactersAreRefused(t *testing.T) {
	for _, spec := range []string{"s3cret\x00x=produce", "s3cr\u200bet=produce", "sé3cret=all", "s3\x7fcret=all"} {
		_, err := parseTokens(flagTokenSpecs([]string{spec}))
		require.Error(t, err, "%q", spec)
		assert.Contains(t, err.Error(), "printable ASCII", "%q", spec)
		assert.NotContains(t, err.Error(), "cret", "the error names the token")
	}
	toks, err := parseTokens(flagTokenSpecs([]string{"s3cr et~!=produce"}))
	require.NoError(t, err, "a space inside and punctuation are sendable")
	assert.Contains(t, toks, "s3cr et~!")
}
