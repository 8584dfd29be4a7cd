package testfixture

import "testing"

// EachHeaderScenario runs f as a subtest, named after the scenario, for
// every file of testdata/headers; a file that does not parse fails t.
func EachHeaderScenario(t *testing.T, f func(t *testing.T, file string, sc *HeaderScenario)) {
	t.Helper()
	each(t, "headers/*.txt", ReadHeaderScenario, func(sc *HeaderScenario) string { return sc.Name }, f)
}

// EachTraffic runs f as a subtest, named after the pattern, for every
// file of testdata/traffic; a file that does not parse fails t.
func EachTraffic(t *testing.T, f func(t *testing.T, file string, tr *Traffic)) {
	t.Helper()
	each(t, "traffic/*.csv", ReadTraffic, func(tr *Traffic) string { return tr.Name }, f)
}

func each[T any](t *testing.T, pattern string, read func(string) (T, error), name func(T) string, f func(*testing.T, string, T)) {
	t.Helper()
	files, err := Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		v, err := read(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name(v), func(t *testing.T) { f(t, file, v) })
	}
}
