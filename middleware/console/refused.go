package console

import (
	"context"
	"slices"
	"time"

	"github.com/fixedwindow/ratelimit/internal/hitboard"
	"github.com/fixedwindow/ratelimit/internal/hitters"
)

// limitedWithin is how recent a key's last refusal must be for it to
// be "limited now".
const limitedWithin = time.Minute

// maxLimited is the most keys the "limited now" list shows.
const maxLimited = 20

// A refusedView is a key's refusals of the last hour, every replica's,
// as the page and the JSON show them.
type refusedView struct {
	// Count is how many times the key was refused, high by at most Over
	// (the sketch's error: refusals of keys it took the place of).
	Count int64     `json:"count"`
	Over  int64     `json:"over,omitempty"`
	Runs  []runView `json:"runs"`
	Error string    `json:"error,omitempty"` // other replicas' refusals could not be read or written
}

// A runView is one run of refused windows: the policy's window, the
// windows' span, the first and last refusal, how many.
type runView struct {
	Policy string `json:"policy"`
	Window string `json:"window"`
	Limit  int64  `json:"limit,omitempty"`
	From   string `json:"from"` // the start of the first refused window, RFC 3339 UTC
	To     string `json:"to"`   // the end of the last
	First  string `json:"first"`
	Last   string `json:"last"`
	Count  int64  `json:"count"`
}

// A limitedView is the keys limited now: refused in the last minute,
// the most refused in the last hour first.
type limitedView struct {
	At    string       `json:"at"`
	Keys  []limitedKey `json:"keys"`
	Error string       `json:"error,omitempty"`
}

type limitedKey struct {
	// Key is the key in clear, or its hash (Hashed) when another
	// replica refused it under RefusalsConfig.KeyHash and this one
	// never did: Redis holds no key in clear.
	Key      string   `json:"key"`
	Hashed   bool     `json:"hashed,omitempty"`
	Count    int64    `json:"count"`
	Over     int64    `json:"over,omitempty"`
	First    string   `json:"first"`
	Last     string   `json:"last"`
	Policies []string `json:"policies"`
}

// about returns key's refusals of the hour before now, this replica's
// and the others' merged.
func (r *Refusals) about(ctx context.Context, key string, now time.Time) *refusedView {
	ms := now.UnixMilli()
	r.mu.Lock()
	local, ok := r.sketch.Lookup(key, ms)
	r.mu.Unlock()
	form := r.shared(key)
	var all [][]hitters.Entry
	if ok {
		local.Key = form
		all = append(all, []hitters.Entry{local})
	}
	others, errText := r.others(ctx)
	for _, s := range others {
		for _, e := range s.Entries {
			if e.Key == form {
				all = append(all, []hitters.Entry{e})
			}
		}
	}
	v := &refusedView{Runs: []runView{}, Error: errText}
	for _, e := range hitters.Merge(all...) {
		v.Count, v.Over = e.Count, e.Err
		for _, run := range e.Runs {
			if run.Last >= ms-hitters.Span {
				v.Runs = append(v.Runs, runView{Policy: run.Policy, Window: run.Window, Limit: run.Limit,
					From: stamp(run.Start), To: stamp(run.End), First: stamp(run.First), Last: stamp(run.Last), Count: run.Count})
			}
		}
	}
	return v
}

// limitedNow returns the keys refused in the minute before now, every
// replica's, the most refused first (counts since each key entered the
// sketch).
func (r *Refusals) limitedNow(ctx context.Context, now time.Time) *limitedView {
	ms := now.UnixMilli()
	r.mu.Lock()
	local := r.sketch.Entries(ms)
	r.mu.Unlock()
	clearKeys := make(map[string]string, len(local)) // shared form → clear key
	for i := range local {
		form := r.shared(local[i].Key)
		clearKeys[form], local[i].Key = local[i].Key, form
	}
	all := [][]hitters.Entry{local}
	others, errText := r.others(ctx)
	for _, s := range others {
		all = append(all, s.Entries)
	}
	v := &limitedView{At: now.UTC().Format(time.RFC3339), Keys: []limitedKey{}, Error: errText}
	for _, e := range hitters.Top(hitters.Merge(all...), ms-limitedWithin.Milliseconds(), maxLimited) {
		k := limitedKey{Key: e.Key, Count: e.Count, Over: e.Err, First: stamp(e.First), Last: stamp(e.Last), Policies: []string{}}
		if c, ok := clearKeys[e.Key]; ok {
			k.Key = c
		} else {
			k.Hashed = r.hasher != nil
		}
		for _, run := range e.Runs {
			if !slices.Contains(k.Policies, run.Policy) {
				k.Policies = append(k.Policies, run.Policy)
			}
		}
		v.Keys = append(v.Keys, k)
	}
	return v
}

// others returns the other replicas' summaries, and what went wrong
// sharing this replica's or reading theirs.
func (r *Refusals) others(ctx context.Context) ([]hitboard.Summary, string) {
	if r.board == nil {
		return nil, ""
	}
	r.mu.Lock()
	werr := r.err
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	s, err := r.board.Others(ctx)
	switch {
	case err != nil:
		return nil, "console: other replicas' refusals: " + err.Error()
	case werr != nil:
		return s, "console: this replica's refusals were not shared: " + werr.Error()
	}
	return s, ""
}

// stamp writes a Unix millisecond in RFC 3339, UTC, to the second.
func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
