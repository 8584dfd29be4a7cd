package sim

import (
	"context"
	"time"
)

// slidingLog is a reference model, for comparison only: it keeps the
// instant of every admitted request of each key and admits a request when
// fewer than Limit were admitted in the window of length Window that ends
// at it, (at−Window, at]. No span of one window ever holds more than
// Limit admitted requests; the price is Limit instants of memory per key.
type slidingLog struct {
	cfg  Config
	logs map[string][]time.Duration
}

func newSlidingLog(cfg Config) *slidingLog {
	return &slidingLog{cfg: cfg, logs: make(map[string][]time.Duration)}
}

func (m *slidingLog) Allow(_ context.Context, key string, at time.Duration) (bool, error) {
	log := m.logs[key]
	drop := 0
	for drop < len(log) && log[drop] <= at-m.cfg.Window {
		drop++
	}
	log = log[drop:]
	if int64(len(log)) >= m.cfg.Limit {
		m.logs[key] = log
		return false, nil
	}
	// append reallocates once the slice reaches the end of its array,
	// copying only the live instants, so memory stays O(Limit) per key.
	m.logs[key] = append(log, at)
	return true, nil
}

func (m *slidingLog) Close() error { return nil }
