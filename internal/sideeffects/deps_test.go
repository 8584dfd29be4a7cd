package sideeffects

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fixedwindow/ratelimit"

// forbidden are the packages whose import registers handlers on
// http.DefaultServeMux: /debug/pprof/ and /debug/vars.
var forbidden = []string{"net/http/pprof", "expvar"}

// allowed names, per library package and forbidden package, the only
// package through which it may arrive, and why.
var allowed = map[[2]string]string{
	// middleware/metrics exists to register Prometheus collectors, and
	// client_golang/prometheus itself imports expvar: a program that uses
	// it has /debug/vars whether or not it imports this module.
	{module + "/middleware/metrics", "expvar"}: "github.com/prometheus/client_golang/prometheus",
	// keyfunc/chikey reads what chi's ClientIPFrom* middlewares store: only
	// a program that already imports chi's middleware package imports it.
	{module + "/keyfunc/chikey", "expvar"}:         "github.com/go-chi/chi/v5/middleware",
	{module + "/keyfunc/chikey", "net/http/pprof"}: "github.com/go-chi/chi/v5/middleware",
}

// goList runs the go command at the root of this module, outside any
// workspace, so that it lists this module's packages only.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// libraryPackages lists the packages a user may import: every package of
// the root module that is not a command, an example or internal.
func libraryPackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{.Name}}", "./...") {
		path, name, _ := strings.Cut(line, " ")
		rel := strings.TrimPrefix(path, module)
		if name == "main" || strings.HasPrefix(rel, "/example/") || strings.Contains(rel+"/", "/internal/") {
			continue
		}
		pkgs = append(pkgs, path)
	}
	if !slices.Contains(pkgs, module+"/middleware") || !slices.Contains(pkgs, module+"/keyfunc") {
		t.Fatalf("library packages %q lack middleware or keyfunc: the listing is wrong", pkgs)
	}
	return pkgs
}

// TestLibraryDepsHaveNoDebugHandlers fails when a library package depends,
// directly or through any dependency, on net/http/pprof or expvar, except
// by the route named in allowed.
func TestLibraryDepsHaveNoDebugHandlers(t *testing.T) {
	for _, pkg := range libraryPackages(t) {
		t.Run(strings.TrimPrefix(pkg, module+"/"), func(t *testing.T) {
			// Each dependency with its own imports, to name who brings a
			// forbidden package in.
			importers := map[string][]string{}
			for _, line := range goList(t, "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg) {
				fields := strings.Fields(line)
				for _, imp := range fields[1:] {
					if slices.Contains(forbidden, imp) {
						importers[imp] = append(importers[imp], fields[0])
					}
				}
			}
			for _, f := range forbidden {
				by := importers[f]
				if len(by) == 0 {
					continue
				}
				if via, ok := allowed[[2]string{pkg, f}]; ok && len(by) == 1 && by[0] == via {
					continue
				}
				t.Errorf("%s depends on %s, imported by %q: importing it would register a handler on http.DefaultServeMux", pkg, f, by)
			}
		})
	}
}
