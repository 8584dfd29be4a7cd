// Command apicount counts the identifiers the root module exports, by
// the rule of issue 37: every package of the root module outside
// internal/, example/ and bench/ (nested modules are not the root
// module); its exported functions, the exported methods of its exported
// types, its exported types, constants and variables; struct fields and
// interface methods are not counted. It prints the count per package and
// in all, and with -max N fails when the total passes N.
//
//	go run ./internal/apicount -max 235
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

var verbose bool

func main() {
	max := flag.Int("max", 0, "fail when the total exceeds this (0: never)")
	flag.BoolVar(&verbose, "v", false, "list every identifier")
	root := flag.String("root", ".", "the root module's directory")
	flag.Parse()
	counts, err := count(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	total := 0
	var dirs []string
	for d := range counts {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		fmt.Printf("%-28s %d\n", d, counts[d])
		total += counts[d]
	}
	fmt.Printf("%-28s %d\n", "total", total)
	if *max > 0 && total > *max {
		fmt.Fprintf(os.Stderr, "apicount: the root module exports %d identifiers, more than %d\n", total, *max)
		os.Exit(1)
	}
}

// count returns the exported identifiers of each package directory
// under root that belongs to the root module and is public.
func count(root string) (map[string]int, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel != "." {
			base := d.Name()
			if strings.HasPrefix(base, ".") || base == "testdata" || base == "internal" || rel == "example" || rel == "bench" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		n, ok, err := countDir(path)
		if err != nil {
			return err
		}
		if ok {
			counts[rel] = n
		}
		return nil
	})
	return counts, err
}

// countDir counts the exported identifiers of the package in dir, its
// test files and main packages left out; ok is false when dir holds no
// such package. Files whose build tags leave them out of every build
// are none here: the module builds every file on every platform.
func countDir(dir string) (n int, ok bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return 0, false, err
		}
		if f.Name.Name == "main" {
			continue
		}
		ok = true
		for _, decl := range f.Decls {
			n += countDecl(decl)
		}
	}
	return n, ok, nil
}

func countDecl(decl ast.Decl) int {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return 0
		}
		if d.Recv == nil {
			list(d.Name.Name)
			return 1
		}
		if recv := recvName(d.Recv.List[0].Type); ast.IsExported(recv) {
			list(recv + "." + d.Name.Name)
			return 1
		}
		return 0
	case *ast.GenDecl:
		n := 0
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					list("type " + s.Name.Name)
					n++
				}
			case *ast.ValueSpec:
				for _, id := range s.Names {
					if id.IsExported() {
						list(id.Name)
						n++
					}
				}
			}
		}
		return n
	}
	return 0
}

// list prints an identifier counted, with -v.
func list(name string) {
	if verbose {
		fmt.Println("\t" + name)
	}
}

// recvName returns the name of a receiver's type.
func recvName(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}
