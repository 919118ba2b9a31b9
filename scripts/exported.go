//go:build ignore

// exported counts the exported package-level names of Go packages: every
// exported name a const, var, type or func declaration of the package's
// non-test files (for this platform) introduces, each name of a grouped
// or multi-name declaration once. Methods and struct fields are not
// counted: they are reached through a type that is. It prints one line
// per package, "<dir> <names> names, <methods> exported methods", and
// with -max N exits 1 when a package has N or more names.
//
//	go run scripts/exported.go -max 90 internal/benchmark internal/results
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
)

func main() {
	limit := flag.Int("max", 0, "fail when a package has this many names or more (0: no limit)")
	flag.Parse()
	over := false
	for _, dir := range flag.Args() {
		names, methods, err := count(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "exported:", err)
			os.Exit(2)
		}
		fmt.Printf("%s %d names, %d exported methods\n", dir, names, methods)
		if *limit > 0 && names >= *limit {
			fmt.Printf("%s exports %d names, the limit is under %d\n", dir, names, *limit)
			over = true
		}
	}
	if over {
		os.Exit(1)
	}
}

// count parses the package in dir and counts its exported package-level
// names and its exported methods.
func count(dir string) (names, methods int, err error) {
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		return 0, 0, err
	}
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, 0, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case !d.Name.IsExported():
				case d.Recv != nil:
					methods++
				default:
					names++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names++
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names++
							}
						}
					}
				}
			}
		}
	}
	return names, methods, nil
}
