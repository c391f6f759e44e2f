package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseTokenFile reads and checks one token file as serve does.
func parseTokenFile(t *testing.T, body string) (map[string]string, error) {
	t.Helper()
	p := writeTokenFile(t, t.TempDir(), "tokens", body, 0o600)
	specs, _, err := readTokenFiles([]string{p})
	require.NoError(t, err)
	toks, err := parseTokens(specs)
	if err != nil {
		return nil, err
	}
	scoped, err := parseTokenNamespaces(specs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(toks))
	for tok, r := range toks {
		out[tok] = r.String() + "@" + scoped[tok]
	}
	return out, nil
}

// A token file that an editor began with a UTF-8 byte order mark (Windows
// Notepad, say) gives its first token without it: the mark is no part of
// the token, and a token holding it could never be sent by a client.
func TestTokenFile_ByteOrderMarkIsNoPartOfTheFirstToken(t *testing.T) {
	toks, err := parseTokenFile(t, "\ufefffirst-7f3a=produce\r\nsecond-9c1e=all@team-a\r\n")
	require.NoError(t, err)
	assert.Len(t, toks, 2)
	assert.Contains(t, toks, "first-7f3a")
	assert.Contains(t, toks, "second-9c1e")

	toks, err = parseTokenFile(t, "\ufeff# a comment first\nfirst-7f3a=produce\n")
	require.NoError(t, err)
	assert.Contains(t, toks, "first-7f3a")
}

// An error about a token file's line names the file and line but shows no
// text of the line: past its first "=" a line may still hold a secret (a
// NAME=SECRET line as in an environment file, two specs on one line, a
// token with "=" in it, lines ended by a lone CR), which an unknown right
// or a bad namespace quoted would print to stderr and the logs.
func TestTokenFile_ErrorsShowNoTextOfTheLine(t *testing.T) {
	const secret = "s3cret-0123456789"
	for _, body := range []string{
		"EQUEUE_TOKEN=" + secret + "\n",
		"a-tok=all " + secret + "=produce\n",
		"a-tok=all@team-a " + secret + "=produce\n",
		"a-tok=all\r" + secret + "=produce\r",
		"s3cret=0123456789=all\n",
		"=" + secret + "\n",
	} {
		_, err := parseTokenFile(t, body)
		require.Error(t, err, "%q", body)
		assert.Contains(t, err.Error(), "tokens:1:", "%q", body)
		assert.NotContains(t, err.Error(), "0123456789", "the error shows a secret of %q", body)
	}
}
