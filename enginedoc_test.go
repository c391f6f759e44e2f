package equeue_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocs_EngineDocNamesEveryMethod holds the Engine type's doc comment,
// which sorts the methods into what applications call and the Broker
// seam (the package doc sends readers there "for the full grouping"), to
// every exported method of *Engine: a method added later must be placed
// in a group.
func TestDocs_EngineDocNamesEveryMethod(t *testing.T) {
	doc, methods := engineDocAndMethods(t)
	require.NotEmpty(t, doc, "the Engine type's doc comment was not found")
	require.Greater(t, len(methods), 20, "the Engine's methods were not found")

	named := map[string]bool{}
	for _, w := range regexp.MustCompile(`[A-Za-z]+`).FindAllString(doc, -1) {
		named[w] = true
	}
	var missing []string
	for _, m := range methods {
		if !named[m] {
			missing = append(missing, m)
		}
	}
	assert.Empty(t, missing, "the Engine's doc comment places these methods in no group:\n%s", strings.Join(missing, "\n"))
}

// engineDocAndMethods reads the package's non-test files and returns the
// Engine type's doc comment and the names of its exported methods (and
// Open), sorted.
func engineDocAndMethods(t *testing.T) (doc string, methods []string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == "Engine" && d.Doc != nil {
						doc = d.Doc.Text()
					}
				}
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					if d.Name.Name == "Open" {
						methods = append(methods, "Open")
					}
					continue
				}
				if star, ok := d.Recv.List[0].Type.(*ast.StarExpr); ok {
					if id, ok := star.X.(*ast.Ident); ok && id.Name == "Engine" {
						methods = append(methods, d.Name.Name)
					}
				}
			}
		}
	}
	sort.Strings(methods)
	return doc, methods
}
