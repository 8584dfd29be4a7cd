package main

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// progressConfig sets when the progress line appears and how often it is
// redrawn.
type progressConfig struct {
	delay, every time.Duration
}

// defaultProgress shows nothing for a run of under a second (the usual 40
// requests to loopback take a fraction of it), then redraws four times a
// second.
var defaultProgress = progressConfig{delay: time.Second, every: 250 * time.Millisecond}

// progress redraws "  1234/5000 requests" on one line of w while a run goes
// on, and erases it at the end so that the table starts on a clean line.
type progress struct {
	quit, exited chan struct{}
}

func newProgress(w io.Writer, cfg progressConfig, total int, done *atomic.Int64) *progress {
	p := &progress{quit: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(p.exited)
		timer := time.NewTimer(cfg.delay)
		defer timer.Stop()
		select {
		case <-p.quit:
			return
		case <-timer.C:
		}
		ticker := time.NewTicker(cfg.every)
		defer ticker.Stop()
		width := 0
		for {
			line := fmt.Sprintf("  %d/%d requests", done.Load(), total)
			width = max(width, len(line))
			fmt.Fprintf(w, "\r%-*s", width, line)
			select {
			case <-p.quit:
				fmt.Fprintf(w, "\r%*s\r", width, "")
				return
			case <-ticker.C:
			}
		}
	}()
	return p
}

// stop ends the line and waits until it is erased.
func (p *progress) stop() {
	close(p.quit)
	<-p.exited
}
