package sim

import (
	"bytes"
	"context"
	"testing"
	"time"
)

type row struct {
	allowed, rejected, worst int
}

func simulateRows(t *testing.T, p *Pattern, cfg Config) map[string]row {
	t.Helper()
	rs, err := Simulate(context.Background(), p, cfg, Names())
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]row)
	for _, r := range rs {
		out[r.Limiter] = row{r.Allowed, r.Rejected, r.Worst(p, cfg.Window)}
	}
	return out
}

// The edge pattern against 10 per second: the table in docs/lab.md.
func TestSimulateEdge(t *testing.T) {
	got := simulateRows(t, loadPattern(t, "edge.csv"), Config{Limit: 10, Window: time.Second})
	want := map[string]row{
		None:        {20, 0, 20},
		FixedWindow: {20, 0, 20},
		Layered:     {4, 16, 4},
		SlidingLog:  {10, 10, 10},
		TokenBucket: {11, 9, 11},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("edge, 10/s, %s: (allowed, rejected, worst) = %v, want %v", name, got[name], w)
		}
	}
}

// The edge exercise: start the edge at 0.50 s instead of 0.90 s. All 20
// requests now fall inside the window [0 s, 1 s), which admits 10, so the
// fixed window's worst second falls to the limit.
func TestSimulateEdgeExercise(t *testing.T) {
	cfg := Config{Limit: 10, Window: time.Second}
	edge := loadPattern(t, "edge.csv")
	moved := edge.Shift(500*time.Millisecond - edge.Requests[0].At)
	if first, last := moved.Requests[0].At, moved.Requests[19].At; first != 500*time.Millisecond || last != 690*time.Millisecond {
		t.Fatalf("moved edge runs %v to %v, want 500ms to 690ms", first, last)
	}
	if got, want := simulateRows(t, moved, cfg)[FixedWindow], (row{10, 10, 10}); got != want {
		t.Errorf("edge from 0.50s, fixed-window: (allowed, rejected, worst) = %v, want %v", got, want)
	}
}

// Whatever the limit, the fixed window's worst
// second on the edge is a multiple of the limit (twice it, when the edge
// holds enough requests).
func TestSimulateEdgeWorstIsTwiceTheLimit(t *testing.T) {
	edge := loadPattern(t, "edge.csv")
	for _, limit := range []int64{1, 2, 5, 10} {
		cfg := Config{Limit: limit, Window: time.Second}
		if got := simulateRows(t, edge, cfg)[FixedWindow].worst; got != int(2*limit) {
			t.Errorf("edge, limit %d: fixed-window worst 1s = %d, want %d", limit, got, 2*limit)
		}
	}
}

func TestSimulateEmptyPattern(t *testing.T) {
	if _, err := Simulate(context.Background(), &Pattern{}, Config{Limit: 1, Window: time.Second}, Names()); err != ErrEmptyPattern {
		t.Errorf("Simulate(empty) error = %v, want %v", err, ErrEmptyPattern)
	}
}

func TestSimulateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Simulate(ctx, loadPattern(t, "edge.csv"), Config{Limit: 1, Window: time.Second}, []string{FixedWindow})
	if err == nil {
		t.Error("Simulate with a cancelled context: got nil error")
	}
}

func TestWriteTableManyKeys(t *testing.T) {
	p := &Pattern{Name: "two", Requests: []Request{{0, "a"}, {0, "b"}, {0, "a"}, {100 * time.Millisecond, "a"}}}
	cfg := Config{Limit: 2, Window: 500 * time.Millisecond}
	rs, err := Simulate(context.Background(), p, cfg, []string{None, FixedWindow})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, p, cfg, rs); err != nil {
		t.Fatal(err)
	}
	want := `pattern two: 4 requests from 2 keys, limit 2 per 500ms per key

limiter        allowed  rejected  worst 500ms  worst 500ms/key
none                 4         0            4                3
fixed-window         3         1            3                2
`
	if buf.String() != want {
		t.Errorf("WriteTable:\n%s\nwant:\n%s", buf.String(), want)
	}
}
