package cluster

import (
	"bytes"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Secrets a guess finds at once are refused: one byte repeated, and text
// (printable characters and white space only) shorter than
// MinRaftTextSecretLen. Sixteen bytes that are not all text, and text of
// MinRaftTextSecretLen, are taken.
func TestNewSecureStream_RefusesAWeakSecret(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret []byte
		want   error
	}{
		{"one byte repeated", bytes.Repeat([]byte{'a'}, 64), ErrRaftSecretWeak},
		{"zeros", make([]byte, 4096), ErrRaftSecretWeak},
		{"short text", []byte("correct horse battery"), ErrRaftSecretTooShort},
		{"text of 31", []byte("0123456789abcdef0123456789abcde"), ErrRaftSecretTooShort},
		{"binary of 16", []byte{0x9c, 1, 0xfe, 2, 0x80, 3, 0x11, 4, 0xa5, 5, 0x3b, 6, 0xd7, 7, 0x62, 8}, nil},
		{"text of 32", []byte("0123456789abcdef0123456789abcdef"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer l.Close()
			s, err := NewSecureStream(l, nil, tc.secret)
			if tc.want == nil {
				require.NoError(t, err)
				require.NoError(t, s.Close())
				return
			}
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, s)
		})
	}
}
