package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches an inline Markdown link or image: [text](target) or
// ![alt](target), the target up to the first ')' or space (a title
// after it is left out).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// A link is one relative link of a Markdown file.
type link struct {
	file   string // the file it is in, relative to the repository's root
	line   int
	target string
}

func (l link) String() string { return fmt.Sprintf("%s:%d: (%s)", l.file, l.line, l.target) }

// relativeLinks returns the links of a Markdown text that point into the
// repository: not to a scheme (http:, https:, mailto:), and outside
// fenced code blocks, where brackets and parentheses are code.
func relativeLinks(file, text string) []link {
	var links []link
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(line), -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			links = append(links, link{file: file, line: n, target: t})
		}
	}
	return links
}

// stripCode blanks the inline code spans of a line, whose text is code,
// not links.
func stripCode(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors GitHub gives a Markdown text's headings:
// the heading lower-cased, its punctuation removed but for '-' and '_',
// spaces made '-', and a repeated one suffixed -1, -2, ...
func anchors(text string) map[string]bool {
	got := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			got[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			got[a] = true
		}
		seen[a]++
	}
	return got
}

// checkLinks returns a problem for every link of files (by path relative
// to root, with their text) whose file does not exist, or whose anchor
// names no heading of a Markdown file.
func checkLinks(root string, files map[string]string) []error {
	var errs []error
	for file, text := range files {
		for _, l := range relativeLinks(file, text) {
			path, anchor, _ := strings.Cut(l.target, "#")
			target := file // a bare #anchor is in the file itself
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
			}
			body, ok := files[target]
			if !ok {
				b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(target)))
				if err != nil {
					if fi, serr := os.Stat(filepath.Join(root, filepath.FromSlash(target))); serr == nil && fi.IsDir() && anchor == "" {
						continue // a directory: GitHub lists it
					}
					errs = append(errs, fmt.Errorf("%v: %s does not exist", l, target))
					continue
				}
				body = string(b)
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				errs = append(errs, fmt.Errorf("%v: an anchor into %s, which has no headings", l, target))
				continue
			}
			if !anchors(body)[anchor] {
				errs = append(errs, fmt.Errorf("%v: %s has no heading with anchor #%s", l, target, anchor))
			}
		}
	}
	return errs
}

// markdownFiles returns README.md, SECURITY.md and docs/*.md, by path
// relative to root, with their text.
func markdownFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(root, "README.md"), filepath.Join(root, "SECURITY.md"))
	files := map[string]string{}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(src)
	}
	return files
}

// TestRelativeLinks follows every relative link of README.md, SECURITY.md
// and docs/*.md: its file must exist, and its anchor, if any, must name a
// heading of the file it points into.
func TestRelativeLinks(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	n := 0
	for file, text := range files {
		n += len(relativeLinks(file, text))
	}
	if n == 0 {
		t.Fatal("no relative link found: the scan is broken")
	}
	for _, err := range checkLinks(root, files) {
		t.Error(err)
	}
	t.Logf("%d relative links in %d files", n, len(files))
}

// TestLinkChecksCanFail feeds checkLinks links that must be refused, and
// ones that must not, so that TestRelativeLinks passing means something.
func TestLinkChecksCanFail(t *testing.T) {
	root := repoRoot(t)
	const doc = "# A page\n\n## Redis in ten lines\n\n## Twice\n\n## Twice\n"
	tests := []struct {
		name string
		md   string
		want string // "" for no problem
	}{
		{"missing_file", "see [x](nope.md)", "docs/nope.md does not exist"},
		{"missing_anchor", "see [x](page.md#redis-in-eleven-lines)", "has no heading with anchor #redis-in-eleven-lines"},
		{"missing_anchor_in_self", "see [x](#nowhere)", "docs/bad.md has no heading with anchor #nowhere"},
		{"anchor_into_code", "see [x](../go.mod#L1)", "which has no headings"},
		{"anchor_that_holds", "see [x](page.md#redis-in-ten-lines)", ""},
		{"second_heading_of_a_name", "see [x](page.md#twice-1)", ""},
		{"directory", "see [x](../example/chi)", ""},
		{"file_outside_docs", "see [x](../limiter/redisstore/take.lua)", ""},
		{"inside_code_ignored", "`[x](nope.md)` and\n```\n[y](nope.md)\n```\n", ""},
		{"absolute_url_ignored", "see [x](https://example.com/nope.md)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := checkLinks(root, map[string]string{"docs/bad.md": tt.md, "docs/page.md": doc})
			var all strings.Builder
			for _, err := range errs {
				all.WriteString(err.Error())
			}
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Fatalf("checks of %q: got %q, want no problem", tt.md, all.String())
			case tt.want != "" && !strings.Contains(all.String(), tt.want):
				t.Fatalf("checks of %q: got %q, want a problem mentioning %q", tt.md, all.String(), tt.want)
			}
		})
	}
}
