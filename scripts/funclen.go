//go:build ignore

// funclen lists non-test Go functions longer than a threshold.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	min := flag.Int("min", 100, "report functions with more lines than this")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	type fn struct {
		name  string
		lines int
	}
	var out []fn
	fset := token.NewFileSet()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "testdata") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			var name string
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			default:
				return true
			}
			if body == nil {
				return true
			}
			l := fset.Position(body.Rbrace).Line - fset.Position(n.Pos()).Line + 1
			if l > *min {
				out = append(out, fn{fmt.Sprintf("%s:%d %s", p, fset.Position(n.Pos()).Line, name), l})
			}
			return true
		})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].lines > out[j].lines })
	for _, f := range out {
		fmt.Printf("%4d %s\n", f.lines, f.name)
	}
	fmt.Printf("%d functions over %d lines\n", len(out), *min)
}
