package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// checkLeaves asserts the orderedMap's structure: leaves non-empty, each
// sorted, in order across leaves, none above the split size, and n equal to
// the number of keys held.
func checkLeaves(t require.TestingT, m *orderedMap) {
	n := 0
	prev := ""
	for i, l := range m.leaves {
		require.NotEmpty(t, l.keys, "leaf %d is empty", i)
		require.Len(t, l.vals, len(l.keys), "leaf %d", i)
		require.LessOrEqual(t, len(l.keys), 2*m.leafSize, "leaf %d is over size", i)
		for j, k := range l.keys {
			if i > 0 || j > 0 {
				require.Less(t, prev, k, "leaf %d key %d out of order", i, j)
			}
			prev = k
		}
		n += len(l.keys)
	}
	require.Equal(t, n, m.Len())
}

// TestOrderedMap_Model drives random sets, deletes, gets and prefix scans
// that stop early against a Go map whose keys are sorted for each scan.
func TestOrderedMap_Model(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := newOrderedMap(rapid.IntRange(4, 16).Draw(rt, "leafSize"))
		model := map[string][]byte{}
		// A small alphabet gives shared prefixes, repeated keys and keys
		// that are prefixes of others.
		key := rapid.StringOfN(rapid.RuneFrom([]rune("abc")), 0, 5, -1)
		for step := range rapid.IntRange(1, 400).Draw(rt, "steps") {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3: // set
				k := key.Draw(rt, "key")
				v := []byte(fmt.Sprint(step))
				old, had := m.Set(k, v)
				want, wantHad := model[k]
				require.Equal(rt, wantHad, had, "set %q: had", k)
				require.Equal(rt, want, old, "set %q: old value", k)
				model[k] = v
			case 4, 5, 6: // delete
				k := key.Draw(rt, "key")
				old, had := m.Delete(k)
				want, wantHad := model[k]
				require.Equal(rt, wantHad, had, "delete %q: had", k)
				require.Equal(rt, want, old, "delete %q: old value", k)
				delete(model, k)
			case 7: // get
				k := key.Draw(rt, "key")
				v, ok := m.Get(k)
				want, wantOK := model[k]
				require.Equal(rt, wantOK, ok, "get %q", k)
				require.Equal(rt, want, v, "get %q", k)
			case 8, 9: // scan from a key, under a prefix, stopping after limit
				prefix := rapid.StringOfN(rapid.RuneFrom([]rune("abc")), 0, 2, -1).Draw(rt, "prefix")
				from := key.Draw(rt, "from")
				limit := rapid.IntRange(1, 50).Draw(rt, "limit")
				var want []string
				for k := range model {
					if strings.HasPrefix(k, prefix) && k >= from {
						want = append(want, k)
					}
				}
				slices.Sort(want)
				want = want[:min(limit, len(want))]
				var got []string
				m.Ascend(from, prefix, func(k string, v []byte) bool {
					require.Equal(rt, model[k], v, "scan: value of %q", k)
					got = append(got, k)
					return len(got) < limit
				})
				require.Equal(rt, want, got, "scan from %q under %q, limit %d", from, prefix, limit)
			}
			checkLeaves(rt, m)
			require.Equal(rt, len(model), m.Len())
		}
	})
}

// TestOrderedMap_Sequences covers the shapes the engine produces: keys
// inserted in order and deleted from the front (delay index), and in
// reverse order, with the leaves checked after each step.
func TestOrderedMap_Sequences(t *testing.T) {
	const n = 2000
	key := func(i int) string { return fmt.Sprintf("d/%08d", i) }
	for _, tc := range []struct {
		name  string
		order func(i int) int
	}{
		{"ascending", func(i int) int { return i }},
		{"descending", func(i int) int { return n - 1 - i }},
		{"interleaved", func(i int) int { return (i * 7919) % n }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newOrderedMap(8)
			for i := range n {
				_, had := m.Set(key(tc.order(i)), []byte{1})
				require.False(t, had)
			}
			checkLeaves(t, m)
			require.Equal(t, n, m.Len())
			var first []string
			m.Ascend("", "d/", func(k string, _ []byte) bool {
				first = append(first, k)
				return len(first) < 3
			})
			require.Equal(t, []string{key(0), key(1), key(2)}, first)
			for i := range n {
				_, had := m.Delete(key(i))
				require.True(t, had)
				if i%97 == 0 {
					checkLeaves(t, m)
				}
			}
			checkLeaves(t, m)
			require.Zero(t, m.Len())
			require.Empty(t, m.leaves)
		})
	}
}
