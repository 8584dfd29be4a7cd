package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/internal/hitboard"
	"github.com/fixedwindow/ratelimit/internal/hitters"
	"github.com/fixedwindow/ratelimit/internal/keyhash"
	refusaltext "github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// A RefusalsConfig says how many keys a Refusals remembers and whether
// it shares them with the other replicas. The zero RefusalsConfig
// remembers 1,000 keys on this replica alone.
type RefusalsConfig struct {
	// Keys is how many keys are remembered, the most refused of the
	// last hour (see Refusals). Default 1,000; docs/console.md gives the
	// memory and the summary's size per key.
	Keys int
	// Redis, if set, shares this replica's refusals with the replicas
	// that share it: each writes its own summary at most once a second,
	// and a console reads them all.
	Redis redis.UniversalClient
	// Prefix starts the keys the summaries are kept under in Redis, as
	// redisstore.WithPrefix does the counts'. Default "rl:".
	Prefix string
	// KeyHash is the secret of redisstore.WithKeyHash, if the service's
	// store hashes keys: the summaries in Redis then hold keyed hashes of
	// the keys, never a key in clear. It needs Redis.
	KeyHash []byte
}

// defaultKeys is RefusalsConfig.Keys's default.
const defaultKeys = 1000

// shareEvery is the least time between two writes of one replica's
// summary.
const shareEvery = time.Second

// shareTimeout bounds one write of a summary.
const shareTimeout = 5 * time.Second

// Refusals remembers the refusals a service's doors see, for the
// console (Config.Refusals) to answer "why was this key refused?" after
// the window has rolled over, and "who is limited now?". Give its
// Observe to middleware.WithObserver and grpclimit.WithObserver: it
// counts their Denied events, a map look-up and a few sums under a
// mutex, and never writes to a store per refusal.
//
// It keeps the keys refused most (a key none of whose runs is of the
// last hour leaves it), at most RefusalsConfig.Keys of them, in a Space-Saving sketch: a key refused
// more than one in Keys of the refusals is always in it; a key refused
// once in a flood of others may be pushed out, and is then shown as
// never refused. For each key it keeps its runs of refused windows, the
// eight latest: the policy, the window, when the refusals began and
// ended, how many.
//
// With Redis it writes its summary to Redis at most once a second, and
// only after a refusal. The zero Refusals is not usable: build one with
// NewRefusals, and Close it when the service stops.
type Refusals struct {
	hasher *keyhash.Hasher // nil: keys are shared in clear
	board  *hitboard.Board // nil: this replica alone

	mu     sync.Mutex
	sketch *hitters.Sketch
	latest int64       // the latest refusal's instant, Unix ms
	timer  *time.Timer // the next write, if one is due
	last   time.Time   // when the last write began (the wall clock: it paces writes)
	closed bool
	err    error // the last write's

	write   sync.Mutex     // one write at a time
	pending sync.WaitGroup // the timer's write, from its arming to its end
}

// NewRefusals returns a Refusals as cfg says. It refuses negative Keys,
// a KeyHash without Redis and a KeyHash shorter than redisstore.WithKeyHash
// takes.
func NewRefusals(cfg RefusalsConfig) (*Refusals, error) {
	switch {
	case cfg.Keys < 0:
		return nil, fmt.Errorf("console: RefusalsConfig.Keys is %d: give a positive number of keys, or 0 for %d", cfg.Keys, defaultKeys)
	case cfg.KeyHash != nil && cfg.Redis == nil:
		return nil, errors.New("console: RefusalsConfig.KeyHash without Redis: only what is shared through Redis is hashed")
	}
	keys := cfg.Keys
	if keys == 0 {
		keys = defaultKeys
	}
	r := &Refusals{sketch: hitters.New(keys)}
	if cfg.KeyHash != nil {
		h, err := keyhash.New("console: RefusalsConfig.KeyHash", cfg.KeyHash)
		if err != nil {
			return nil, err
		}
		r.hasher = h
	}
	if cfg.Redis != nil {
		prefix := cfg.Prefix
		if prefix == "" {
			prefix = "rl:"
		}
		var id [9]byte
		_, _ = rand.Read(id[:]) // never fails (crypto/rand)
		r.board = hitboard.New(cfg.Redis, prefix, base64.RawURLEncoding.EncodeToString(id[:]), time.Now)
	}
	return r, nil
}

// Observe counts e if it is a refusal (middleware.Denied): its key, its
// policy, the deciding window, the decision's instant. Any other event
// is ignored, a shadow mode's refusal (ShadowDenied) too: it refused
// nobody.
func (r *Refusals) Observe(e middleware.Event) {
	if e.Outcome != middleware.Denied || e.Key == "" || e.Policy == nil {
		return
	}
	rf, ok := refusalOf(e.Key, e.Policy.Name(), &e.Decision)
	if !ok {
		return
	}
	// The refusals age by their deciding limiter's clock, a test's
	// too, but never past this process's own by more than aheadBound:
	// one refusal dated far ahead, by a limiter whose clock is wrong,
	// would otherwise make every other look an hour old, and forgotten.
	ahead := time.Now().Add(aheadBound).UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sketch.AddAt(rf, ahead)
	r.latest = max(r.latest, min(rf.At, ahead))
	if r.board != nil && r.timer == nil && !r.closed {
		// The pace is the wall clock's: it bounds writes to Redis, which
		// a test's clock does not slow.
		r.pending.Add(1)
		r.timer = time.AfterFunc(time.Until(r.last.Add(shareEvery)), r.share)
	}
}

// aheadBound is how far ahead of this process's clock a refusal's
// instant ages the refusals: other clocks (Redis's, another replica's)
// run a little ahead.
const aheadBound = time.Minute

// refusalOf describes a refusal d of key under policy: its deciding
// window, or for an in-flight cap the minute it was refused in.
func refusalOf(key, policy string, d *limiter.Decision) (hitters.Refusal, bool) {
	at := d.DecidedAt()
	if at.IsZero() {
		return hitters.Refusal{}, false
	}
	rf := hitters.Refusal{Key: key, Policy: policy, Limit: d.Limit, At: at.UnixMilli()}
	switch i := refusaltext.MatchWindow(d, d.NumWindows()); {
	case refusaltext.IsCap(d):
		rf.Window, rf.Start = "in flight", at.Truncate(time.Minute).UnixMilli()
		rf.End = rf.Start + time.Minute.Milliseconds()
		return rf, true
	case i >= 0:
		ws := d.WindowAt(i)
		rf.Window, rf.Start, rf.End = ws.Name, ws.ResetAt.Add(-ws.Window).UnixMilli(), ws.ResetAt.UnixMilli()
	default:
		rf.Window, rf.Start, rf.End = refusaltext.WindowSuffix(d.Window), d.ResetAt.Add(-d.Window).UnixMilli(), d.ResetAt.UnixMilli()
	}
	return rf, true
}

// share writes the summary when its timer fires.
func (r *Refusals) share() {
	defer r.pending.Done()
	ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
	defer cancel()
	_ = r.Flush(ctx) // kept in r.err, which the console shows
}

// Flush writes this replica's summary to Redis now, whatever the pace,
// and returns the write's error; without Redis it does nothing. The
// summary is otherwise written at most once a second after a refusal:
// Flush is for a test, or a service about to stop (Close flushes).
func (r *Refusals) Flush(ctx context.Context) error {
	if r.board == nil {
		return nil
	}
	r.write.Lock()
	defer r.write.Unlock()
	r.mu.Lock()
	r.disarm()
	r.last = time.Now()
	s := hitboard.Summary{At: r.latest, Entries: r.sketch.Entries(r.latest)}
	r.mu.Unlock()
	for i := range s.Entries {
		s.Entries[i].Key = r.shared(s.Entries[i].Key)
	}
	err := r.board.Publish(ctx, s)
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
	return err
}

// disarm stops the timer of the next write, if one is armed; a write
// it began already goes on. r.mu is held.
func (r *Refusals) disarm() {
	if r.timer != nil && r.timer.Stop() {
		r.pending.Done()
	}
	r.timer = nil
}

// Close stops the writes of the summary, after writing what was not
// written yet, and returns when no write is under way.
func (r *Refusals) Close() error {
	r.mu.Lock()
	unwritten := r.timer != nil
	r.closed = true
	r.mu.Unlock()
	var err error
	if unwritten {
		ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
		err = r.Flush(ctx)
		cancel()
	}
	r.pending.Wait()
	return err
}

// shared returns the form of key other replicas see: its hash under
// KeyHash, else key.
func (r *Refusals) shared(key string) string {
	if r.hasher == nil {
		return key
	}
	return r.hasher.Key(key)
}
