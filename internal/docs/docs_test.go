package docs

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A block is one fenced go block of a Markdown file.
type block struct {
	file string // relative to the repository's root
	line int    // of the opening fence, 1-based
	code string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// goBlocks returns the blocks fenced as go in a Markdown text.
func goBlocks(file, text string) []block {
	var blocks []block
	var cur *block
	var code strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.TrimSpace(line)
		switch {
		case cur == nil && fence == "```go":
			cur = &block{file: file, line: n}
			code.Reset()
		case cur != nil && fence == "```":
			cur.code = code.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		}
	}
	return blocks
}

var mirrorLine = regexp.MustCompile(`^// Mirrors (Example\w*) in (\S+_test\.go)\.$`)

// copyLine starts a block that shows a whole program of a module of its
// own (example/observe), which make test builds and vets there.
var copyLine = regexp.MustCompile(`^// Copy of (\S+\.go)\.$`)

// kind reports what a block is: "program" when its first line that is
// neither blank nor a comment is "package main", "mirror" (with the
// Example's name and file) when its first line names one, "copy" (with
// the file) when its first line names a file it copies, or "".
func kind(b block) (k, example, file string) {
	lines := strings.Split(b.code, "\n")
	first := ""
	for _, l := range lines {
		if first = strings.TrimSpace(l); first != "" {
			break
		}
	}
	if m := mirrorLine.FindStringSubmatch(first); m != nil {
		return "mirror", m[1], m[2]
	}
	if m := copyLine.FindStringSubmatch(first); m != nil {
		return "copy", "", m[1]
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		if t == "package main" {
			return "program", "", ""
		}
		break
	}
	return "", "", ""
}

// checkMirror reports whether the Example named in the block exists in
// root/file and holds every line of the block but the first.
func checkMirror(root string, b block, example, file string) error {
	path := filepath.Join(root, filepath.FromSlash(file))
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%v: mirrors %s in %s: %v", b, example, file, err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return fmt.Errorf("%v: %v", b, err)
	}
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == example {
			fn = fd
		}
	}
	if fn == nil {
		return fmt.Errorf("%v: mirrors %s, which %s does not define", b, example, file)
	}
	body := string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
	have := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	lines := strings.Split(strings.TrimLeft(b.code, "\n"), "\n")[1:]
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !have[t] {
			return fmt.Errorf("%v: line %q is not in %s (%s)", b, t, example, file)
		}
	}
	return nil
}

// checkCopy reports whether the block, but its first line, is the whole
// of root/file: a program of a nested module, which this module cannot
// build, but make test builds and vets where it is.
func checkCopy(root string, b block, file string) error {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return fmt.Errorf("%v: copy of %s: %v", b, file, err)
	}
	_, rest, _ := strings.Cut(strings.TrimLeft(b.code, "\n"), "\n")
	if strings.TrimSpace(rest) != strings.TrimSpace(string(src)) {
		return fmt.Errorf("%v: the block differs from %s, which it says it copies", b, file)
	}
	return nil
}

// buildPrograms writes each program into a directory of its own under
// root/internal/docs/testdata, inside the module so that its imports
// resolve against this go.mod, and runs go build and go vet on them all.
// It returns one error per failing command, naming the blocks.
func buildPrograms(t *testing.T, root string, programs []block) []error {
	t.Helper()
	if len(programs) == 0 {
		return nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the documentation's programs: %v", err)
	}
	base := filepath.Join(root, "internal", "docs", "testdata")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(base, "blocks-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	var pkgs []string
	names := map[string]block{}
	for i, b := range programs {
		name := fmt.Sprintf("b%02d_%s_%d", i, strings.NewReplacer("/", "_", ".", "_").Replace(b.file), b.line)
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.code), 0o644); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
		names[name] = b
	}
	var errs []error
	for _, args := range [][]string{{"build", "-o", os.DevNull}, {"vet"}} {
		if args[0] == "build" && len(pkgs) > 1 {
			args = []string{"build"} // several main packages: build and discard
		}
		cmd := exec.Command(goTool, append(args, pkgs...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err == nil {
			continue
		}
		text := string(out)
		for name, b := range names {
			text = strings.ReplaceAll(text, filepath.ToSlash(filepath.Join(filepath.Base(tmp), name)), b.String())
		}
		errs = append(errs, fmt.Errorf("go %s: %v\n%s", args[0], err, text))
	}
	return errs
}

// check runs every check on the Markdown files (name to text) and returns
// the problems found.
func check(t *testing.T, root string, files map[string]string) []error {
	t.Helper()
	var errs []error
	var programs []block
	for file, text := range files {
		for _, b := range goBlocks(file, text) {
			switch k, example, src := kind(b); k {
			case "program":
				programs = append(programs, b)
			case "mirror":
				if err := checkMirror(root, b, example, src); err != nil {
					errs = append(errs, err)
				}
			case "copy":
				if err := checkCopy(root, b, src); err != nil {
					errs = append(errs, err)
				}
			default:
				errs = append(errs, fmt.Errorf("%v: a go block must be a complete program (package main) or start with \"// Mirrors ExampleX in path/x_test.go.\" or \"// Copy of path/x.go.\"", b))
			}
		}
	}
	return append(errs, buildPrograms(t, root, programs)...)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

// TestGoBlocks checks every go block of README.md and docs/*.md.
func TestGoBlocks(t *testing.T) {
	root := repoRoot(t)
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(root, "README.md"))
	files := map[string]string{}
	n := 0
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(src)
		n += len(goBlocks(rel, string(src)))
	}
	readme := goBlocks("README.md", files["README.md"])
	if len(readme) == 0 {
		t.Fatal("README.md has no go block")
	}
	if k, _, _ := kind(readme[0]); k != "program" {
		t.Errorf("%v: the README's first go block must be a complete program", readme[0])
	}
	for _, err := range check(t, root, files) {
		t.Error(err)
	}
	t.Logf("%d go blocks in %d files", n, len(files))
}

// TestChecksCanFail feeds the checks blocks that must be refused, so that
// TestGoBlocks passing means something.
func TestChecksCanFail(t *testing.T) {
	root := repoRoot(t)
	tests := []struct {
		name string
		md   string
		want string
	}{
		{"unused_variable", "```go\npackage main\n\nfunc main() {\n\terr := error(nil)\n}\n```\n", "declared and not used"},
		{"undefined_name", "```go\npackage main\n\nimport \"net/http\"\n\nfunc main() {\n\thttp.Handle(\"/\", items)\n}\n```\n", "undefined: items"},
		{"vet_only", "```go\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Printf(\"%d\\n\", \"x\")\n}\n```\n", "wrong type"},
		{"fragment", "```go\nl, err := limiter.New(p)\n```\n", "must be a complete program"},
		{"missing_example", "```go\n// Mirrors ExampleNope in limiter/example_test.go.\nx := 1\n```\n", "does not define"},
		{"missing_copy", "```go\n// Copy of example/nope/main.go.\npackage main\n```\n", "copy of example/nope/main.go"},
		{"copy_that_differs", "```go\n// Copy of example/observe/otel/main.go.\npackage main\n```\n", "differs from example/observe/otel/main.go"},
		{"line_not_in_example", "```go\n// Mirrors ExampleNewPolicy_layered in limiter/example_test.go.\np, err := limiter.NewPolicy(\"api\", limiter.PerMinute(7))\n```\n", "is not in ExampleNewPolicy_layered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := check(t, root, map[string]string{"bad.md": tt.md})
			var all strings.Builder
			for _, err := range errs {
				all.WriteString(err.Error())
			}
			if !strings.Contains(all.String(), tt.want) {
				t.Fatalf("checks of %q: got %q, want a problem mentioning %q", tt.md, all.String(), tt.want)
			}
		})
	}
	t.Run("mirror_that_holds", func(t *testing.T) {
		md := "```go\n// Mirrors ExampleNewPolicy_layered in limiter/example_test.go.\np, err := limiter.NewPolicy(\"api\", limiter.PerMinute(100), limiter.PerSecond(5))\n```\n"
		if errs := check(t, root, map[string]string{"good.md": md}); len(errs) != 0 {
			t.Fatalf("a faithful mirror was refused: %v", errs)
		}
	})
}

// maxReadme is the most README.md may weigh: a front page of a few
// screens (three complete programs: the quick start, the chi recipe,
// Redis with its failures logged), with the long form in docs/.
const maxReadme = 12 << 10

// TestReadmeFrontPage keeps README.md a front page: at most maxReadme
// bytes, and a link to every file of docs/.
func TestReadmeFrontPage(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(readme) > maxReadme {
		t.Errorf("README.md is %d bytes, want at most %d: move the long form to docs/", len(readme), maxReadme)
	}
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		link := "(docs/" + filepath.Base(p)
		if !strings.Contains(string(readme), link+")") && !strings.Contains(string(readme), link+"#") {
			t.Errorf("README.md does not link docs/%s", filepath.Base(p))
		}
	}
}
