package main

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// runLab runs the lab with args and returns its exit code and output.
func runLab(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The tables of "lab simulate", checked against testdata/golden; run
// "go test ./example/lab -run TestSimulateGolden -update" to rewrite them
// after a deliberate change, and read the diff.
func TestSimulateGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"simulate_edge.txt", nil},
		{"simulate_edge_seed.txt", []string{"--pattern", "edge", "--limiters", "none,fixed-window,sliding-log,token-bucket"}},
		{"simulate_edge_limit5.txt", []string{"--limit", "5"}},
		{"simulate_steady.txt", []string{"--pattern", "steady"}},
		{"simulate_burst.txt", []string{"--pattern", "burst"}},
		{"simulate_burst_window2s.txt", []string{"--pattern", "burst", "--window", "2s", "--limit", "15"}},
		{"simulate_two_clients.txt", []string{"--pattern", "testdata/two-clients.csv", "--limit", "5"}},
		// The edge across Paris's midnight (the spring-forward day): a
		// day's budget at 23:59:59.9 and the next at 00:00:00.0.
		{"simulate_edge_midnight_paris.txt", []string{"--pattern", "edge", "--calendar", "day", "--zone", "Europe/Paris", "--start", "2026-03-28T23:59:59+01:00"}},
		// The 1st of the month in Eucla (+8:45), two clients.
		{"simulate_two_clients_month_eucla.txt", []string{"--pattern", "testdata/two-clients.csv", "--limit", "5", "--calendar", "month", "--zone", "Australia/Eucla", "--start", "2026-04-30T23:59:59+08:45"}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.golden, ".txt"), func(t *testing.T) {
			code, got, stderr := runLab(t, append([]string{"simulate"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("simulate %q: exit %d, stderr %q", tt.args, code, stderr)
			}
			path := filepath.Join("testdata", "golden", tt.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("simulate %q:\n%s\nwant (%s):\n%s", tt.args, got, path, want)
			}
		})
	}
}

// The edge table, byte for byte, for four limiters chosen with --limiters.
func TestSimulateEdgeTable(t *testing.T) {
	const want = `pattern edge: 20 requests, limit 10 per second

limiter        allowed  rejected  worst 1s
none                20         0        20
fixed-window        20         0        20
sliding-log         10        10        10
token-bucket        11         9        11
`
	code, got, stderr := runLab(t, "simulate", "--pattern", "edge", "--limiters", "none,fixed-window,sliding-log,token-bucket")
	if code != 0 || got != want {
		t.Errorf("simulate --pattern edge: exit %d, stdout:\n%s\nstderr %q\nwant:\n%s", code, got, stderr, want)
	}
}

// The edge exercise, run through the command: the edge moved to start at
// 0.50 s (a file the user edited) keeps all 20 requests inside the first
// window, and the fixed window's worst second falls to the limit.
func TestSimulateEdgeExerciseFile(t *testing.T) {
	edge, ok, err := builtinPattern("edge")
	if !ok || err != nil {
		t.Fatalf("built-in edge: %v, %v", ok, err)
	}
	path := filepath.Join(t.TempDir(), "edge-050.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := edge.Shift(500*time.Millisecond - edge.Requests[0].At).WriteCSV(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	code, got, stderr := runLab(t, "simulate", "--pattern", path, "--limiters", "fixed-window")
	want := "fixed-window        10        10        10\n"
	if code != 0 || !strings.Contains(got, want) || !strings.Contains(got, "20 requests") {
		t.Errorf("simulate --pattern %s: exit %d, stdout:\n%s\nstderr %q; want the row %q", path, code, got, stderr, want)
	}
}

func TestSimulateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("# ok\n0.1\n0.2,alice\nsoon,bob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(empty, []byte("# nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string // the whole of stderr
	}{
		{"unknown_flag", []string{"--bogus"}, 2, "lab simulate: --bogus: no such flag; the flags are --calendar, --limit, --limiters, --pattern, --plot, --start, --window, --zone\n"},
		{"zone_without_calendar", []string{"--zone", "Europe/Paris"}, 2, "lab simulate: --zone Europe/Paris: does not apply without --calendar; e.g. --zone Europe/Paris\n"},
		{"unknown_calendar", []string{"--calendar", "year"}, 2, "lab simulate: --calendar year: must be one of day, week, month; e.g. --calendar day\n"},
		{"unknown_zone", []string{"--calendar", "day", "--zone", "Mars/Olympus"}, 2, "lab simulate: --zone Mars/Olympus: not a zone of the tz database; e.g. --zone Europe/Paris\n"},
		{"calendar_sliding_log", []string{"--calendar", "day", "--limiters", "fixed-window,sliding-log"}, 2, "lab simulate: --limiters fixed-window,sliding-log: sliding-log counts per window, it has no --calendar; e.g. --limiters fixed-window,sliding-log\n"},
		{"calendar_plot", []string{"--calendar", "day", "--plot", "day.png"}, 2, "lab simulate: --plot day.png: does not apply with --calendar: the plot draws fixed windows; e.g. --plot edge.svg\n"},
		{"start_not_rfc3339", []string{"--start", "yesterday"}, 2, "lab simulate: --start yesterday: not an RFC 3339 instant; e.g. --start 2026-03-28T23:59:59+01:00\n"},
		{"limit_zero", []string{"--limit", "0"}, 2, "lab simulate: --limit 0: must be from 1 to 100000; e.g. --limit 10\n"},
		{"limit_huge", []string{"--limit", "1000000"}, 2, "lab simulate: --limit 1000000: must be from 1 to 100000; e.g. --limit 10\n"},
		{"limit_not_a_number", []string{"--limit", "ten"}, 2, "lab simulate: --limit ten: not a whole number; e.g. --limit 10\n"},
		{"window_not_a_duration", []string{"--window", "abc"}, 2, "lab simulate: --window abc: not a duration; e.g. --window 1s\n"},
		{"window_missing_value", []string{"--window"}, 2, "lab simulate: --window: needs a value; e.g. --window 1s\n"},
		{"window_sub_ms", []string{"--window", "1500us"}, 2, "lab simulate: --window 1500us: must be a whole number of milliseconds from 1ms to 24h; e.g. --window 1s\n"},
		{"window_too_long", []string{"--window", "48h"}, 2, "lab simulate: --window 48h: must be a whole number of milliseconds from 1ms to 24h; e.g. --window 1s\n"},
		{"window_layered_odd", []string{"--window", "1001ms"}, 2, "lab simulate: --window 1001ms: layered cuts the window into 5 whole milliseconds, so use a multiple of 5ms, or leave layered out with --limiters; e.g. --window 1s\n"},
		{"unknown_limiter", []string{"--limiters", "none,leaky-bucket"}, 2, "lab simulate: --limiters none,leaky-bucket: unknown limiter \"leaky-bucket\" (choose from none, fixed-window, layered, sliding-log, token-bucket); e.g. --limiters fixed-window,sliding-log\n"},
		{"limiter_twice", []string{"--limiters", "none,none"}, 2, "lab simulate: --limiters none,none: none named twice; e.g. --limiters fixed-window,sliding-log\n"},
		{"plot_extension", []string{"--plot", "out.pdf"}, 2, "lab simulate: --plot out.pdf: unknown image type \".pdf\", use .svg or .png; e.g. --plot edge.svg\n"},
		{"plot_no_extension", []string{"--plot", "out"}, 2, "lab simulate: --plot out: unknown image type \"\", use .svg or .png; e.g. --plot edge.svg\n"},
		{"stray_argument", []string{"edge"}, 2, "lab simulate: unexpected argument \"edge\"; lab simulate takes flags only (lab simulate -h)\n"},
		{"unknown_pattern", []string{"--pattern", "spiky"}, 2, "lab simulate: --pattern spiky: no such built-in pattern or file; e.g. --pattern edge (built in: burst, edge, steady)\n"},
		{"missing_file", []string{"--pattern", filepath.Join(dir, "none.csv")}, 1, "lab simulate: pattern: open " + filepath.Join(dir, "none.csv") + ": no such file or directory\n"},
		{"directory", []string{"--pattern", dir}, 1, "lab simulate: sim: read " + dir + ": read " + dir + ": is a directory\n"},
		{"malformed_line", []string{"--pattern", bad}, 1, "lab simulate: " + bad + ":4: timestamp \"soon\": not a number of seconds (digits, optionally a '.' and more digits) (comment a header line out with \"#\")\n"},
		{"no_requests", []string{"--pattern", empty}, 1, "lab simulate: sim: pattern has no requests: " + empty + " holds no timestamp\n"},
		{"plot_unwritable", []string{"--plot", filepath.Join(dir, "no", "such", "dir.png")}, 1, "plot written"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runLab(t, append([]string{"simulate"}, tt.args...)...)
			if tt.name == "plot_unwritable" {
				if code != 1 || !strings.HasPrefix(stderr, "lab simulate: plot: open ") || strings.Contains(stderr, tt.msg) || strings.Count(stderr, "\n") != 1 {
					t.Errorf("simulate %q: exit %d, stderr %q; want exit 1 and one line \"lab simulate: plot: open ...\"", tt.args, code, stderr)
				}
				return
			}
			if code != tt.code || stderr != tt.msg {
				t.Errorf("simulate %q: exit %d, stderr %q; want exit %d, stderr %q", tt.args, code, stderr, tt.code, tt.msg)
			}
		})
	}
}

func TestSimulateHelp(t *testing.T) {
	code, _, stderr := runLab(t, "simulate", "-h")
	if code != 0 || !strings.Contains(stderr, "usage: lab simulate") || !strings.Contains(stderr, "-pattern") {
		t.Errorf("simulate -h: exit %d, stderr %q; want exit 0 and the flags", code, stderr)
	}
}

func TestSimulateWindowNeedNotSplitWithoutLayered(t *testing.T) {
	code, out, stderr := runLab(t, "simulate", "--window", "1001ms", "--limiters", "fixed-window,sliding-log")
	if code != 0 || !strings.Contains(out, "worst 1.001s") {
		t.Errorf("simulate --window 1001ms without layered: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestSimulatePlot(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"edge.png", "edge.svg", "EDGE.PNG"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			code, out, stderr := runLab(t, "simulate", "--plot", path)
			if code != 0 || stderr != "plot written to "+path+"\n" || !strings.HasPrefix(out, "pattern edge:") {
				t.Fatalf("simulate --plot %s: exit %d, stdout %q, stderr %q", path, code, out, stderr)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(strings.ToLower(name), ".svg") {
				for _, want := range []string{"<svg", "pattern edge: 20 requests, limit 10 per second", "fixed-window", "window boundary"} {
					if !bytes.Contains(data, []byte(want)) {
						t.Errorf("%s does not contain %q", name, want)
					}
				}
				return
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
				t.Errorf("%s is %dx%d, want at least 600x300", name, b.Dx(), b.Dy())
			}
		})
	}
}

func TestSimulatePlotTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.csv")
	if err := os.WriteFile(path, bytes.Repeat([]byte("1\n"), maxPlotRequests+1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runLab(t, "simulate", "--pattern", path, "--plot", filepath.Join(t.TempDir(), "x.svg"))
	want := "lab simulate: --plot: the pattern has 20001 requests; a plot shows at most 20000 (cut the file)\n"
	if code != 1 || stderr != want {
		t.Errorf("simulate of %d requests with --plot: exit %d, stderr %q; want 1, %q", maxPlotRequests+1, code, stderr, want)
	}
}

// The plotting library is the lab's alone: no other package of the module
// may import it, directly or not.
func TestPlotStaysInTheLab(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}",
		"github.com/fixedwindow/ratelimit/limiter/...",
		"github.com/fixedwindow/ratelimit/middleware/...",
		"github.com/fixedwindow/ratelimit/headers/...",
		"github.com/fixedwindow/ratelimit/keyfunc/...",
		"github.com/fixedwindow/ratelimit/example/lab/internal/...",
	).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list listed %d packages: %q", len(deps), out)
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "gonum.org/") {
			t.Errorf("a core package depends on %s", dep)
		}
	}
}
