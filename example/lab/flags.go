package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/example/lab/internal/sim"
)

// flagHelp speaks every flag error of a command in one voice: the flag as
// the user typed it, with the value given, what is wrong, and an example
// of a right value:
//
//	lab serve: --window abc: not a duration; e.g. --window 30s
//	lab serve: --limit 0: must be at least 1; e.g. --limit 10
//
// The flag package's own parse errors are reworded into the same form.
type flagHelp struct {
	fs   *flag.FlagSet
	args []string
	// examples holds a right value for each flag, by name; "" for a
	// boolean flag, whose example is the bare flag.
	examples map[string]string
}

// bad returns the usage error for flag name, whose value is value
// (shown as the user typed it when it was typed), with problem saying
// what is wrong.
func (h flagHelp) bad(name string, value any, problem string) error {
	typed, v, ok := h.typed(name)
	if !ok {
		v = fmt.Sprint(value)
		if d, isDur := value.(time.Duration); isDur {
			v = sim.ShortDuration(d)
		}
	}
	return usageError{fmt.Errorf("%s %s: %s; %s", typed, quoteIfNeeded(v), problem, h.example(name, typed))}
}

// example returns "e.g. --window 30s" for name as typed.
func (h flagHelp) example(name, typed string) string {
	ex, ok := h.examples[name]
	switch {
	case !ok:
		return "see lab " + h.fs.Name() + " -h"
	case ex == "":
		return "e.g. " + typed
	default:
		return "e.g. " + typed + " " + ex
	}
}

// typed finds flag name in the arguments, as flag.Parse would read them
// (the last occurrence wins), and returns it with its dashes ("-n",
// "--window") and the value given; ok is false if it was not typed, and
// the flag is then spelled "--name".
func (h flagHelp) typed(name string) (flagAsTyped, value string, ok bool) {
	flagAsTyped = "--" + name
	for i := 0; i < len(h.args); i++ {
		a := h.args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		dashes := "-"
		if strings.HasPrefix(a, "--") {
			dashes = "--"
		}
		n, v, hasValue := strings.Cut(a[len(dashes):], "=")
		if n != name {
			if f := h.fs.Lookup(n); f != nil && !hasValue && !isBool(f) {
				i++ // skip the value of another flag
			}
			continue
		}
		flagAsTyped, ok = dashes+name, true
		switch f := h.fs.Lookup(name); {
		case hasValue:
			value = v
		case f != nil && isBool(f):
			value = "true"
		case i+1 < len(h.args):
			value = h.args[i+1]
			i++
		default:
			value = ""
		}
	}
	return flagAsTyped, value, ok
}

// parseFlags parses a command's flags: -h prints usage (the command line,
// any notes, then the flags) to stderr and returns flag.ErrHelp; a bad flag
// or a stray argument is a usageError in the voice of flagHelp, which it
// returns for the command's own checks.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, examples map[string]string, notes ...string) (flagHelp, error) {
	h := flagHelp{fs: fs, args: args, examples: examples}
	var setErr *setError
	fs.VisitAll(func(f *flag.Flag) { f.Value = &recordingValue{Value: f.Value, name: f.Name, last: &setErr} })
	err := fs.Parse(args)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stderr, "usage: lab %s [flags]\n", fs.Name())
		for _, n := range notes {
			fmt.Fprintln(stderr, n)
		}
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		return h, err
	case setErr != nil:
		return h, h.bad(setErr.name, setErr.value, setErr.problem(fs.Lookup(setErr.name)))
	default:
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			typed, _, _ := h.typed(name)
			return h, usageError{fmt.Errorf("%s: no such flag; the flags are %s", typed, h.flagList())}
		}
		if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
			typed, _, _ := h.typed(name)
			return h, usageError{fmt.Errorf("%s: needs a value; %s", typed, h.example(name, typed))}
		}
		return h, usageError{err}
	}
	if fs.NArg() > 0 {
		return h, usageError{fmt.Errorf("unexpected argument %q; lab %s takes flags only (lab %s -h)", fs.Arg(0), fs.Name(), fs.Name())}
	}
	return h, nil
}

// flagList names the command's flags: "--addr, --fail-open, ...".
func (h flagHelp) flagList() string {
	var names []string
	h.fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// recordingValue keeps the first failed Set of a parse, so that
// parseFlags can reword the flag package's "invalid value" error.
type recordingValue struct {
	flag.Value
	name string
	last **setError
}

type setError struct {
	name, value string
	err         error
}

func (v *recordingValue) Set(s string) error {
	err := v.Value.Set(s)
	if err != nil && *v.last == nil {
		*v.last = &setError{name: v.name, value: s, err: err}
	}
	return err
}

// IsBoolFlag keeps a wrapped boolean flag valid without a value.
func (v *recordingValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (v *recordingValue) Get() any {
	if g, ok := v.Value.(flag.Getter); ok {
		return g.Get()
	}
	return v.Value.String()
}

// problem says what is wrong with the value, by the flag's type.
func (e *setError) problem(f *flag.Flag) string {
	var g any
	if f != nil {
		if getter, ok := f.Value.(flag.Getter); ok {
			g = getter.Get()
		}
	}
	switch g.(type) {
	case time.Duration:
		return "not a duration"
	case bool:
		return "not true or false"
	case int, int64, uint, uint64:
		if errors.Is(e.err, strconv.ErrRange) || strings.Contains(e.err.Error(), "out of range") {
			return "out of range"
		}
		return "not a whole number"
	}
	return e.err.Error()
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// quoteIfNeeded quotes an empty value or one with spaces, so that the
// message shows where it starts and ends.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\"") {
		return strconv.Quote(s)
	}
	return s
}
