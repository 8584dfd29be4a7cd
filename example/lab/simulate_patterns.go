package main

import (
	"bytes"
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/fixedwindow/ratelimit/example/lab/internal/sim"
)

// The built-in patterns are the CSV files users can copy and edit: the
// binary carries them so that "lab simulate --pattern edge" runs anywhere.
//
//go:embed testdata/patterns/*.csv
var patternFiles embed.FS

const patternDir = "testdata/patterns"

// builtinPattern returns the embedded pattern called name; ok is false if
// there is none.
func builtinPattern(name string) (p *sim.Pattern, ok bool, err error) {
	if !fs.ValidPath(name) || strings.Contains(name, "/") {
		return nil, false, nil
	}
	data, err := patternFiles.ReadFile(path.Join(patternDir, name+".csv"))
	if err != nil {
		return nil, false, nil
	}
	p, err = sim.Parse(bytes.NewReader(data), name)
	return p, true, err
}

// builtinPatternNames lists the embedded patterns, sorted.
func builtinPatternNames() []string {
	entries, _ := patternFiles.ReadDir(patternDir)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".csv"))
	}
	sort.Strings(names)
	return names
}
