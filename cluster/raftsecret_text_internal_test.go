package cluster

import (
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A secret a person may have typed is text whatever its white space (the
// newline os.ReadFile leaves, a Windows line end) and its letters beyond
// ASCII: shorter than MinRaftTextSecretLen, it is refused. Random bytes,
// and the README's recipe, are taken.
func TestCheckRaftSecret_TextIsTextWithWhiteSpaceOrNonASCIILetters(t *testing.T) {
	for _, s := range []string{
		"correct-horse-battery-staple\n",
		"correct horse\r\nbattery staple",
		"correct\thorse\tbattery\tstaple",
		"pässwörter-sind-gütig",
		"мой секретный пароль", // 20 letters of Cyrillic: 37 bytes, under 32 characters
	} {
		err := CheckRaftSecret([]byte(s))
		require.ErrorIs(t, err, ErrRaftSecretTooShort, "%q", s)
	}

	random := make([]byte, 32)
	_, err := rand.Read(random)
	require.NoError(t, err)
	assert.NoError(t, CheckRaftSecret(random), "32 random bytes")
	// head -c 32 /dev/urandom | base64
	assert.NoError(t, CheckRaftSecret([]byte(base64.StdEncoding.EncodeToString(random))), "the README's recipe")
	assert.NoError(t, CheckRaftSecret([]byte("0123456789abcdef0123456789abcdef\n")), "text of 32 characters and a newline")
}
