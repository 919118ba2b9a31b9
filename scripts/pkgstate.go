//go:build ignore

// pkgstate fails when a package given on the command line keeps mutable
// state at package level. Run by scripts/deps.sh:
//
//	go run scripts/pkgstate.go DIR...
//
// A package-level var declared in a non-test file of DIR is allowed only
// when it is one of:
//
//   - a sentinel error: its value is a call to errors.New;
//   - a constant table: an unexported var whose value is a composite
//     literal (a map, slice, array or struct literal) or a call to
//     regexp.MustCompile, or that a //go:embed directive fills, whose
//     type and value name nothing of package sync or sync/atomic, and
//     which no file of the package, tests included, ever writes: it is never on the left of =, op=, ++ or --,
//     whole or through an index, a field or a dereference (T = …,
//     T[k] = …, T.f = …), never has its address taken (&T, &T[k], &T.f),
//     and is never the first argument of delete, clear or copy.
//   - the blank identifier (var _ I = (*T)(nil), a compile-time check).
//
// Anything else — a var without a value (a hook a test sets, a registry),
// a func value, an exported table (any importer may assign it), a value
// computed by any other call — is mutable state, and the package must
// carry it on a value its callers hold instead (a job, an options
// struct, the command tree). Constants are never state.
//
// It prints one line per offending var and exits 1, or exits 0 silently.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	bad := 0
	for _, dir := range os.Args[1:] {
		msgs, err := check(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pkgstate:", err)
			os.Exit(2)
		}
		for _, m := range msgs {
			fmt.Println(m)
		}
		bad += len(msgs)
	}
	if bad > 0 {
		os.Exit(1)
	}
}

// check returns one message per package-level var of dir that the rule
// refuses.
func check(dir string) ([]string, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	type decl struct {
		pos    token.Position
		name   string
		reason string // "" while allowed so far
	}
	var files []*ast.File
	var decls []*decl
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				embedded := embeds(gd.Doc) || embeds(vs.Doc)
				for i, id := range vs.Names {
					if id.Name == "_" {
						continue
					}
					var value ast.Expr
					if len(vs.Values) == len(vs.Names) {
						value = vs.Values[i]
					}
					reason := judge(id.Name, vs.Type, value)
					if embedded && value == nil && !ast.IsExported(id.Name) {
						reason = "table"
					}
					decls = append(decls, &decl{pos: fset.Position(id.Pos()), name: id.Name, reason: reason})
				}
			}
		}
	}
	tables := map[string]*decl{}
	for _, d := range decls {
		if d.reason == "" || d.reason == "table" {
			tables[d.name] = d
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var written []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					written = n.Lhs
				}
			case *ast.IncDecStmt:
				written = []ast.Expr{n.X}
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					written = []ast.Expr{n.X}
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear" || id.Name == "copy") && len(n.Args) > 0 {
					written = []ast.Expr{n.Args[0]}
				}
			}
			for _, e := range written {
				if d := tables[root(e)]; d != nil && d.reason == "table" {
					d.reason = fmt.Sprintf("written at %s", fset.Position(e.Pos()))
				}
			}
			return true
		})
	}
	var out []string
	for _, d := range decls {
		if d.reason != "" && d.reason != "table" {
			out = append(out, fmt.Sprintf("%s: package-level var %s is mutable state (%s)", d.pos, d.name, d.reason))
		}
	}
	sort.Strings(out)
	return out, nil
}

// judge classifies a declaration by its form: "" for a sentinel error,
// "table" for a candidate constant table (allowed unless written), else
// why it is refused.
func judge(name string, typ, value ast.Expr) string {
	switch {
	case value == nil:
		return "declared without a value"
	case isCall(value, "errors", "New"):
		return ""
	case ast.IsExported(name):
		return "exported, so any importer may assign it"
	case mentionsSync(typ) || mentionsSync(value):
		return "holds a sync or sync/atomic value"
	}
	if _, ok := value.(*ast.CompositeLit); ok || isCall(value, "regexp", "MustCompile") {
		return "table"
	}
	return "its value is neither errors.New, a composite literal nor regexp.MustCompile"
}

// embeds reports whether the comment group holds a //go:embed directive.
func embeds(g *ast.CommentGroup) bool {
	if g == nil {
		return false
	}
	for _, c := range g.List {
		if strings.HasPrefix(c.Text, "//go:embed ") {
			return true
		}
	}
	return false
}

// isCall reports whether e is a call of pkg.fn.
func isCall(e ast.Expr, pkg, fn string) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == fn
}

// mentionsSync reports whether e names anything of package sync or
// sync/atomic (by their usual import names).
func mentionsSync(e ast.Expr) bool {
	found := false
	if e == nil {
		return false
	}
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "sync" || id.Name == "atomic") {
				found = true
			}
		}
		return !found
	})
	return found
}

// root is the variable an expression writes through: T for T, T[k],
// T.f, (*T), T[k].f and so on; "" when there is none.
func root(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.SelectorExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.SliceExpr:
			e = x.X
		default:
			return ""
		}
	}
}
