package sideeffects

import (
	"bytes"
	"io/fs"
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

// goList runs the go command in dir, a module's directory relative to
// the repository's root, outside any workspace, so that it lists that
// module's packages with that module's requirements, as a consumer's
// build would.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join(root, filepath.FromSlash(dir))
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// libraryModules returns the directories of the modules a user may
// require: the root module and every nested one (the metrics adapters,
// each a module of its own) outside bench/, example/, internal/ and
// testdata.
func libraryModules(t *testing.T) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case "bench", "example", "internal", "testdata", ".git":
				if rel != "." {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if d.Name() == "go.mod" {
			dirs = append(dirs, filepath.ToSlash(filepath.Dir(rel)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// libraryPackage is a package a user may import, and the directory of
// its module.
type libraryPackage struct{ path, module string }

// libraryPackages lists the packages a user may import: every package of
// the library modules that is not a command, an example or internal.
func libraryPackages(t *testing.T) []libraryPackage {
	t.Helper()
	var pkgs []libraryPackage
	var paths []string
	for _, dir := range libraryModules(t) {
		for _, line := range goList(t, dir, "-f", "{{.ImportPath}} {{.Name}}", "./...") {
			path, name, _ := strings.Cut(line, " ")
			rel := strings.TrimPrefix(path, module)
			if name == "main" || strings.HasPrefix(rel, "/example/") || strings.Contains(rel+"/", "/internal/") {
				continue
			}
			pkgs = append(pkgs, libraryPackage{path, dir})
			paths = append(paths, path)
		}
	}
	for _, want := range []string{"/middleware", "/keyfunc", "/middleware/metrics", "/middleware/otelmetrics"} {
		if !slices.Contains(paths, module+want) {
			t.Fatalf("library packages %q lack %s: the listing is wrong", paths, module+want)
		}
	}
	return pkgs
}

// TestLibraryDepsHaveNoDebugHandlers fails when a library package depends,
// directly or through any dependency, on net/http/pprof or expvar, except
// by the route named in allowed.
func TestLibraryDepsHaveNoDebugHandlers(t *testing.T) {
	for _, lp := range libraryPackages(t) {
		pkg := lp.path
		t.Run(strings.TrimPrefix(pkg, module+"/"), func(t *testing.T) {
			// Each dependency with its own imports, to name who brings a
			// forbidden package in.
			importers := map[string][]string{}
			for _, line := range goList(t, lp.module, "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg) {
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

// TestOnlyChikeyImportsARouter keeps routers' middleware out of the
// packages every user imports. keyfunc asks chi's root router which route
// will serve a request, so chi's root package, which imports only the
// standard library, is allowed; every other chi package (its middleware,
// which registers /debug/pprof/ and /debug/vars) is keyfunc/chikey's
// alone, for chi users.
func TestOnlyChikeyImportsARouter(t *testing.T) {
	const chiRoot = "github.com/go-chi/chi/v5"
	for _, pkg := range []string{"/keyfunc", "/middleware", "/headers", "/limiter"} {
		for _, dep := range goList(t, ".", "-deps", module+pkg) {
			if strings.HasPrefix(dep, "github.com/go-chi/") && dep != chiRoot {
				t.Errorf("%s depends on %s: only keyfunc/chikey may import a chi package other than its root", module+pkg, dep)
			}
		}
	}
	for _, dep := range goList(t, ".", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", chiRoot) {
		if dep != "" && dep != chiRoot {
			t.Errorf("%s depends on %s: keyfunc may import it only while it imports the standard library alone", chiRoot, dep)
		}
	}
}
