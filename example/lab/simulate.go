package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/example/lab/internal/sim"
)

func init() {
	register("simulate", "replay a traffic pattern through limiters on a fake clock", runSimulate)
}

// simulateConfig is the settled configuration of "lab simulate".
type simulateConfig struct {
	pattern  string
	sim      sim.Config
	limiters []string
	plot     string // "" for none
}

// runSimulate replays a pattern through the chosen limiters and prints the
// table; with --plot it also draws the timeline.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseSimulateFlags(args, stderr)
	if err != nil {
		return err
	}
	p, err := loadPattern(cfg.pattern)
	if err != nil {
		return err
	}
	if cfg.plot != "" && len(p.Requests) > maxPlotRequests {
		return fmt.Errorf("--plot: the pattern has %d requests; a plot shows at most %d (cut the file)", len(p.Requests), maxPlotRequests)
	}
	results, err := sim.Simulate(ctx, p, cfg.sim, cfg.limiters)
	if err != nil {
		return err
	}
	if err := sim.WriteTable(stdout, p, cfg.sim, results); err != nil {
		return err
	}
	if cfg.plot != "" {
		if err := writePlot(cfg.plot, p, cfg.sim, results); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "plot written to %s\n", cfg.plot)
	}
	return nil
}

// parseSimulateFlags checks every flag before any work, so that a bad one
// ends the command at once with one line naming it (exit code 2).
func parseSimulateFlags(args []string, stderr io.Writer) (simulateConfig, error) {
	var (
		cfg                   simulateConfig
		limiters              string
		calendar, zone, start string
	)
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.pattern, "pattern", "edge", "a built-in `pattern` ("+strings.Join(builtinPatternNames(), ", ")+") or a CSV file: one timestamp in seconds per line, optionally a comma and a key; # starts a comment")
	fs.Int64Var(&cfg.sim.Limit, "limit", 10, "requests admitted per key per window")
	fs.DurationVar(&cfg.sim.Window, "window", time.Second, "window length, a whole number of milliseconds (a multiple of 5ms for layered)")
	fs.StringVar(&cfg.plot, "plot", "", "also draw the timeline of admitted requests to `file`.svg or file.png")
	fs.StringVar(&limiters, "limiters", strings.Join(sim.Names(), ","), "comma-separated limiters to run; the table keeps this order (with --calendar: none, fixed-window and layered)")
	fs.StringVar(&calendar, "calendar", "", "count the limit per `period` of --zone, from its local midnights: "+strings.Join(sim.Calendars(), ", ")+" (fixed-window, and layered's long window; --window is then the worst column's span)")
	fs.StringVar(&zone, "zone", "", "the time `zone` of --calendar, a tz database name (default UTC)")
	fs.StringVar(&start, "start", "", "the `instant` the pattern's 0 s stands for, RFC 3339 (default the Unix epoch): start a second before a local midnight to cross it")
	h, err := parseFlags(fs, args, stderr, map[string]string{
		"pattern": "edge", "limit": "10", "window": "1s", "plot": "edge.svg", "limiters": "fixed-window,sliding-log",
		"calendar": "day", "zone": "Europe/Paris", "start": "2026-03-28T23:59:59+01:00",
	})
	if err != nil {
		return cfg, err
	}
	if start != "" {
		t, err := time.Parse(time.RFC3339Nano, start)
		if err != nil {
			return cfg, h.bad("start", start, "not an RFC 3339 instant")
		}
		cfg.sim.Start = t
	}
	_, _, zoneTyped := h.typed("zone")
	switch {
	case calendar == "" && zoneTyped:
		return cfg, h.bad("zone", zone, "does not apply without --calendar")
	case calendar != "" && !slices.Contains(sim.Calendars(), calendar):
		return cfg, h.bad("calendar", calendar, "must be one of "+strings.Join(sim.Calendars(), ", "))
	case calendar != "":
		if zone == "" {
			zone = "UTC"
		}
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return cfg, h.bad("zone", zone, "not a zone of the tz database")
		}
		cfg.sim.Calendar, cfg.sim.Zone = calendar, loc
		if _, _, typed := h.typed("limiters"); !typed {
			limiters = strings.Join([]string{sim.None, sim.FixedWindow, sim.Layered}, ",")
		}
	}
	if l := cfg.sim.Limit; l < 1 || l > sim.MaxLimit {
		return cfg, h.bad("limit", l, fmt.Sprintf("must be from 1 to %d", sim.MaxLimit))
	}
	if w := cfg.sim.Window; w < sim.MinWindow || w > sim.MaxWindow || w%time.Millisecond != 0 {
		return cfg, h.bad("window", w, fmt.Sprintf("must be a whole number of milliseconds from %v to %v", sim.MinWindow, sim.ShortDuration(sim.MaxWindow)))
	}
	for _, name := range strings.Split(limiters, ",") {
		name = strings.TrimSpace(name)
		switch {
		case !slices.Contains(sim.Names(), name):
			return cfg, h.bad("limiters", limiters, fmt.Sprintf("unknown limiter %q (choose from %s)", name, strings.Join(sim.Names(), ", ")))
		case slices.Contains(cfg.limiters, name):
			return cfg, h.bad("limiters", limiters, fmt.Sprintf("%s named twice", name))
		case calendar != "" && (name == sim.SlidingLog || name == sim.TokenBucket):
			return cfg, h.bad("limiters", limiters, fmt.Sprintf("%s counts per window, it has no --calendar", name))
		}
		cfg.limiters = append(cfg.limiters, name)
	}
	if slices.Contains(cfg.limiters, sim.Layered) {
		if _, _, err := sim.LayeredRates(cfg.sim); err != nil {
			return cfg, h.bad("window", cfg.sim.Window, fmt.Sprintf("layered cuts the window into %d whole milliseconds, so use a multiple of %dms, or leave layered out with --limiters",
				sim.LayeredParts, sim.LayeredParts))
		}
	}
	if cfg.plot != "" && calendar != "" {
		return cfg, h.bad("plot", cfg.plot, "does not apply with --calendar: the plot draws fixed windows")
	}
	if cfg.plot != "" {
		switch ext := strings.ToLower(filepath.Ext(cfg.plot)); ext {
		case ".svg", ".png":
		default:
			return cfg, h.bad("plot", cfg.plot, fmt.Sprintf("unknown image type %q, use .svg or .png", ext))
		}
	}
	return cfg, nil
}

// loadPattern returns the built-in pattern called name, or else the
// pattern in the file at path name. A built-in name wins over a file of
// the same name in the current directory; write ./edge to mean the file.
func loadPattern(name string) (*sim.Pattern, error) {
	if p, ok, err := builtinPattern(name); ok {
		return p, err
	}
	f, err := os.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(name, `./\`) {
			return nil, usageError{fmt.Errorf("--pattern %s: no such built-in pattern or file; e.g. --pattern edge (built in: %s)", quoteIfNeeded(name), strings.Join(builtinPatternNames(), ", "))}
		}
		return nil, fmt.Errorf("pattern: %w", err)
	}
	defer f.Close()
	return sim.Parse(f, name)
}
