package equeue_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocs_EveryExportedIdentifierIsCommented walks every package of the
// repository (new ones included, without listing them here) and fails for
// each exported identifier without a doc comment: types, functions,
// methods, constants, variables, struct fields and interface methods.
// Generated files (protobuf) and tests are not read.
func TestDocs_EveryExportedIdentifierIsCommented(t *testing.T) {
	missing, files := undocumented(t, ".")
	require.NotZero(t, files, "no Go file was read")
	assert.Empty(t, missing, "%d exported identifiers have no doc comment:\n%s", len(missing), strings.Join(missing, "\n"))
}

// TestDocs_CheckFindsAMissingComment shows the check fails on what it must
// catch, so an empty result above means something.
func TestDocs_CheckFindsAMissingComment(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// Documented is fine.
type Documented struct {
	// A is fine.
	A int
	B int
	c int
}

type Bare interface {
	// M is fine.
	M()
	N()
}

// F is fine.
func F() {}

func G() {}

func (Documented) H() {}

func (Documented) i() {}

const C = 1

// Grouped constants share the group's comment.
const (
	D = 1
	E = 2
)

var (
	V = 1
)

// Code generated elsewhere is a user's file here: only a generated-file
// header marks a file as generated.
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600))
	missing, _ := undocumented(t, dir)
	assert.ElementsMatch(t, []string{
		"p.go:7: field Documented.B",
		"p.go:11: type Bare",
		"p.go:14: method Bare.N",
		"p.go:20: func G",
		"p.go:22: method Documented.H",
		"p.go:26: const C",
		"p.go:35: var V",
	}, missing)
}

// undocumented parses every non-test, non-generated Go file under root and
// lists the exported identifiers that lack a doc comment, as
// "file:line: kind name".
func undocumented(t *testing.T, root string) (missing []string, files int) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		missing = append(missing, undocumentedIn(fset, f, filepath.ToSlash(rel))...)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(missing)
	return missing, files
}

func undocumentedIn(fset *token.FileSet, f *ast.File, file string) []string {
	var out []string
	report := func(pos token.Pos, kind, name string) {
		out = append(out, fmt.Sprintf("%s:%d: %s %s", file, fset.Position(pos).Line, kind, name))
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				if d.Doc == nil {
					report(d.Pos(), "func", d.Name.Name)
				}
				continue
			}
			recv := receiverName(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				continue // not in the package's documentation
			}
			if d.Doc == nil {
				report(d.Pos(), "method", recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if s.Doc == nil && (d.Doc == nil || d.Lparen.IsValid()) {
						report(s.Pos(), "type", s.Name.Name)
					}
					out = append(out, undocumentedMembers(fset, s, file)...)
				case *ast.ValueSpec:
					// A comment on a parenthesised group covers its
					// members, as in godoc.
					if s.Doc != nil || d.Doc != nil {
						continue
					}
					for _, n := range s.Names {
						if n.IsExported() {
							report(n.Pos(), d.Tok.String(), n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// undocumentedMembers lists a type's exported struct fields and interface
// methods without a comment (a doc comment above, or a line comment after).
func undocumentedMembers(fset *token.FileSet, s *ast.TypeSpec, file string) []string {
	var fields *ast.FieldList
	kind := "field"
	switch tt := s.Type.(type) {
	case *ast.StructType:
		fields = tt.Fields
	case *ast.InterfaceType:
		fields, kind = tt.Methods, "method"
	default:
		return nil
	}
	var out []string
	for _, fl := range fields.List {
		if fl.Doc != nil || fl.Comment != nil || len(fl.Names) == 0 {
			continue // embedded fields and interfaces are documented where declared
		}
		for _, n := range fl.Names {
			if n.IsExported() {
				out = append(out, fmt.Sprintf("%s:%d: %s %s.%s", file, fset.Position(n.Pos()).Line, kind, s.Name.Name, n.Name))
			}
		}
	}
	return out
}

// receiverName is the type name of a method receiver: T, *T, T[K], *T[K].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
