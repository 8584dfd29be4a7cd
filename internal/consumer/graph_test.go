package consumer_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "github.com/fixedwindow/ratelimit"

// TestConsumerModuleGraph builds a scratch module that requires only the
// root module (replaced by this checkout, as a consumer's go get would
// resolve a release) and fails on any module in its graph that
// docs/development.md's Dependencies table does not justify, and on any
// row of that table that the graph no longer holds. A requirement the
// root module needs only for its own tests (a leak checker, a parser to
// check the headers against) raises every consumer's versions: this is
// where one would show.
func TestConsumerModuleGraph(t *testing.T) {
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	justified := justifiedModules(t, filepath.Join(checkout, "docs", "development.md"))

	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.25.0\n\n" +
		"require " + root + " v0.0.0-00010101000000-000000000000\n\n" +
		"replace " + root + " => " + checkout + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "graph")
	cmd.Dir = dir
	// Outside any workspace, resolving what is missing through GOPROXY as
	// the environment sets it, as a consumer's first build would.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod graph: %v\n%s", err, stderr.String())
	}

	graph := graphModules(string(out))
	if !slices.Contains(graph, root) {
		t.Fatalf("go mod graph does not name %s: %s", root, out)
	}
	for _, m := range graph {
		if m != root && m != "example.com/consumer" && !justified[m] {
			t.Errorf("a consumer's module graph holds %s, which docs/development.md's Dependencies table does not justify:\n%s", m, out)
		}
	}
	for m := range justified {
		if !slices.Contains(graph, m) {
			t.Errorf("docs/development.md's Dependencies table justifies %s, which a consumer's module graph no longer holds", m)
		}
	}
}

// graphModules returns the module paths that go mod graph's lines name,
// sorted, without versions and without the go and toolchain entries.
func graphModules(graph string) []string {
	var mods []string
	for _, f := range strings.Fields(graph) {
		path, _, _ := strings.Cut(f, "@")
		if path == "go" || path == "toolchain" || slices.Contains(mods, path) {
			continue
		}
		mods = append(mods, path)
	}
	slices.Sort(mods)
	return mods
}

// row is a line of the Dependencies table: "| `module/path` | ... |".
var row = regexp.MustCompile("^\\| `([^`]+)` \\|")

// justifiedModules reads the module paths of the table in the section
// "## Dependencies" of the file at path.
func justifiedModules(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mods := map[string]bool{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Dependencies"
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			mods[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatalf("%s: no section \"## Dependencies\" with a table of modules", path)
	}
	return mods
}

func TestGraphModules(t *testing.T) {
	const graph = `example.com/consumer github.com/fixedwindow/ratelimit@v0.0.0-00010101000000-000000000000
example.com/consumer go@1.25.0
github.com/fixedwindow/ratelimit@v0.0.0-00010101000000-000000000000 github.com/redis/go-redis/v9@v9.22.0
github.com/fixedwindow/ratelimit@v0.0.0-00010101000000-000000000000 go.uber.org/goleak@v1.3.0
go.uber.org/goleak@v1.3.0 github.com/stretchr/testify@v1.8.0
go@1.25.0 toolchain@go1.25.0
`
	want := []string{"example.com/consumer", root, "github.com/redis/go-redis/v9", "github.com/stretchr/testify", "go.uber.org/goleak"}
	if got := graphModules(graph); !slices.Equal(got, want) {
		t.Fatalf("graphModules = %q, want %q", got, want)
	}
}
