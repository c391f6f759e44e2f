package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster-salt file that starts with a NUL byte is a record: one of a
// later version is refused naming that version, and one cut short or
// damaged (a NUL alone, a head without its salt, an unsalted record with
// more after it, a salt past the bound) is refused as damaged, with or
// without --cluster-salt; none is read as a salt, and none is replaced.
func TestKeptSalt_RecordsOfAnotherVersionOrDamagedAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		content []byte
		says    string
	}{
		"later version":           {[]byte{0, 3}, "a record of version 3, from a later equeue"},
		"later version with data": {[]byte{0, 9, 'x'}, "a record of version 9, from a later equeue"},
		"NUL alone":               {[]byte{0}, "a damaged record"},
		"head alone":              {[]byte{0, 2}, "a damaged record"},
		"version 0":               {[]byte{0, 0, 'x'}, "a damaged record"},
		"unsalted and more":       {[]byte{0, 1, 'x'}, "a damaged record"},
		"salt past the bound":     {append([]byte{0, 2}, bytes.Repeat([]byte("s"), maxSaltFileBytes+1)...), "a damaged record"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, saltFile)
			require.NoError(t, os.WriteFile(path, c.content, 0o600))
			for _, given := range []bool{false, true} {
				_, _, err := keptSalt(dir, []byte("orders-eu"), given)
				require.Error(t, err, "given %v", given)
				assert.Contains(t, err.Error(), c.says, "given %v", given)
				assert.Contains(t, err.Error(), path, "the error names the file")
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, c.content, after, "the file stays as it was")
		})
	}
}
