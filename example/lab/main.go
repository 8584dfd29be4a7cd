// Command lab lets you watch the fixed-window limiter work, and see where
// fixed windows are weak.
//
//	go run ./example/lab serve     # a demo server on the in-memory store
//	go run ./example/lab hammer    # fire requests at it, count the answers
//	go run ./example/lab simulate  # replay traffic on a fake clock
//
// Run "go run ./example/lab <command> -h" for a command's flags.
//
// go run does not pass a kill on to the program it built: to run the
// server in the background and stop it with kill, build it first:
//
//	go build -o /tmp/lab ./example/lab && /tmp/lab serve &
//	kill %1    # SIGTERM (or Ctrl-C, SIGINT): serve shuts down gracefully
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// A command is one subcommand of the lab. Each lives in its own file and
// registers itself in init.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command and returns the process's exit code: 0 on
// success, 1 when the command failed, 2 for bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lab: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "lab %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "lab %s: %v\n", args[0], err)
		return 1
	}
}

// usageError marks bad flags or arguments: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lab <command> [flags]")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
}
