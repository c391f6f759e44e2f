package remote

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/equeue-go/equeue"
)

// clientSideErrors are the engine's sentinels that only a client makes
// (Producer.Request, a handler's DeadLetter or ErrNotHandled, a Producer's
// selector or a hook that panicked, a Consumer's Close that gave up on a
// handler), never a broker's answer; ErrCloseAbandoned
// and ErrCloseUnfinished, which only an engine's or a cluster node's own
// Close or CloseContext returns to its caller (no call closes a broker's
// engine); ErrBusy, which crosses as this package's ErrBusy that wraps it;
// ErrWindowFull, which a client reports before sending anything; and
// ErrGoexit, which a Producer reports when a call it made (a broker's,
// a selector's) ended its goroutine.
var clientSideErrors = map[string]bool{"ErrCloseAbandoned": true, "ErrCloseUnfinished": true, "ErrRequestTimeout": true, "ErrNotRequest": true, "ErrDuplicateRequest": true, "ErrRequestNotStored": true, "ErrDeadLetter": true, "ErrNotHandled": true, "ErrBusy": true, "ErrSelectorPanic": true, "ErrHookPanic": true, "ErrHandlerAbandoned": true, "ErrWindowFull": true, "ErrGoexit": true}

// Every sentinel error package equeue declares crosses the wire: the
// sentinels table names it, so errors.Is matches it on the client as
// in-process. A sentinel added to the engine without a wire name fails
// here.
func TestSentinels_EveryEngineErrorHasAWireName(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir("..")
	require.NoError(t, err)
	table, err := os.ReadFile("errors.go")
	require.NoError(t, err)
	var names []string
	for _, de := range entries {
		if de.IsDir() || !strings.HasSuffix(de.Name(), ".go") || strings.HasSuffix(de.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join("..", de.Name()), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, sp := range g.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	require.NotEmpty(t, names)
	for _, n := range names {
		if clientSideErrors[n] {
			continue
		}
		assert.True(t, strings.Contains(string(table), "equeue."+n+","), "%s has no entry in sentinels", n)
	}
}

// A record of a format version this engine does not read keeps both of
// its sentinels across the wire.
func TestSentinels_UnsupportedFormatCrosses(t *testing.T) {
	err := fromStatus(toStatus(fmt.Errorf("%w: %w: version 9", equeue.ErrCorrupt, equeue.ErrUnsupportedFormat)))
	assert.True(t, errors.Is(err, equeue.ErrUnsupportedFormat))
	assert.True(t, errors.Is(err, equeue.ErrCorrupt))
	var we *Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, codes.DataLoss, we.Code)
}
