package testfixture

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

const rootModule = "github.com/fixedwindow/ratelimit"

// Path returns the path of a file under the top-level testdata/, found by
// walking up from the working directory (a package's directory under go
// test, in the root module or a nested one such as example/lab) to the
// root module's go.mod.
func Path(elem ...string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRoot(dir) {
			return filepath.Join(append([]string{dir, "testdata"}, elem...)...), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("testfixture: no go.mod of " + rootModule + " above the working directory")
		}
		dir = up
	}
}

// Glob returns the files under testdata/ matching pattern, sorted; it is
// an error if none does, so that a moved fixture fails its tests instead
// of silently checking nothing.
func Glob(pattern string) ([]string, error) {
	p, err := Path(pattern)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(p)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("testfixture: no file matches testdata/" + pattern)
	}
	return files, nil
}

func isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == rootModule
		}
	}
	return false
}
