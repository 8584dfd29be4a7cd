package linearize

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// A Spec is what the model of one configuration needs: the policy (each
// window's length and limit), the in-flight cap, how the store keeps
// windows, and the bounds its local state is documented to keep.
type Spec struct {
	Windows []int64 `json:"windows"` // each rate's window, ms
	Limits  []int64 `json:"limits"`  // each rate's limit
	Slots   int64   `json:"slots"`   // the in-flight cap (limiter.NewInFlight's max)
	// Store is "memory" (limiter.MemoryStore) or "redis".
	Store string `json:"store"`
	// ServerClock: Redis's TIME decides (redisstore.WithServerClock).
	ServerClock bool `json:"server_clock,omitempty"`
	// Replicas is how many store values share the Redis.
	Replicas int `json:"replicas"`
	// Stale is the over-limit cache's bound (redisstore.WithOverLimitCache),
	// ms: a refusal may come from what the replica saw at most this long
	// ago. 0: no cache.
	Stale int64 `json:"stale,omitempty"`
	// Lease is, with redisstore.WithLeases, the most units one replica
	// holds leased (cap + max cost − 1, docs/leases.md): what it may
	// still spend, for a second, of a lease granted before another
	// replica's Reset or settle. 0: no leases.
	Lease int64 `json:"lease,omitempty"`
	// Divisor is redisstore.WithFailLocal's: its fallback decides at each
	// limit divided by it (at least 1). 0: no fallback.
	Divisor int64 `json:"divisor,omitempty"`
}

// maxLocalAge is how long the over-limit cache's entries and the leases
// live at most (redisstore's maxLocalAge).
const maxLocalAge = 1000

// check reports a Spec the model cannot use.
func (sp *Spec) check() error {
	switch {
	case len(sp.Windows) == 0 || len(sp.Windows) != len(sp.Limits) || len(sp.Windows) > 4:
		return fmt.Errorf("spec: %d windows and %d limits", len(sp.Windows), len(sp.Limits))
	case sp.Store != "memory" && sp.Store != "redis":
		return fmt.Errorf("spec: store %q", sp.Store)
	case sp.Replicas < 1:
		return fmt.Errorf("spec: %d replicas", sp.Replicas)
	}
	for i, w := range sp.Windows {
		if w <= 0 || sp.Limits[i] <= 0 {
			return fmt.Errorf("spec: rate %d: %d per %d ms", i, sp.Limits[i], w)
		}
	}
	return nil
}

// limit returns rate i's limit, the fallback's (who ≥ 0) or the store's.
func (sp *Spec) limit(who, i int) int64 {
	if who >= 0 {
		return max(1, sp.Limits[i]/sp.Divisor)
	}
	return sp.Limits[i]
}

// slots returns the in-flight cap, the fallback's or the store's.
func (sp *Spec) slots(who int) int64 {
	if who >= 0 {
		return max(1, sp.Slots/sp.Divisor)
	}
	return sp.Slots
}

// single reports whether who's store keeps one window per rate (a
// MemoryStore's table, a fallback, a key under Redis's clock), where a
// request in another window starts it again; else (Redis on the
// limiter's clock) every window is a key of its own.
func (sp *Spec) single(who int) bool {
	return who >= 0 || sp.Store == "memory" || sp.ServerClock
}

// shortest returns the shortest window: how far ahead of its request a
// window kept alone may decide it (at that window's start).
func (sp *Spec) shortest() int64 { return slices.Min(sp.Windows) }

// A count is one window's count of one key: in the store (who −1) or in
// a replica's fallback (who ≥ 0).
type count struct {
	who, rate int
	id, n     int64
	epoch     int // memory: the clock's steps back when it was last written
}

// A mark is what the over-limit cache of replica who may refuse by: a
// window's count as a decision left it, until (ms, the replica's clock).
type mark struct {
	who, rate   int
	id, n, till int64
}

// A credit is what replica who may spend, until till, of a lease granted
// before another replica's Reset or settle.
type credit struct {
	who     int
	n, till int64
}

// A wipe is the instant of the latest Reset of a key in the store (who
// −1) or in replica who's fallback: a return (a refund, a settle below
// its reservation) of a charge decided at or before it returns nothing
// (limiter's resetmark.go, redisstore's reset.lua). Every Reset marks
// every window of the policy at one instant, and a mark outlives every
// window a return could still reach, so one instant per who is the
// mark of each window. On the limiter's clock it is the Reset's At; on
// Redis's, some instant in [lo, hi] that the returns judged since narrow.
type wipe struct {
	who    int
	lo, hi int64
}

// A held slot: who (−1 the store, else a fallback) and the Acquire's id.
type held struct{ who, token int }

// state is one key's state in the model. Its slices are never changed
// once the state is made: a step copies what it changes.
type state struct {
	counts  []count // sorted by who, rate, id
	extra   []count // leases: units admitted from leases granted before a Reset, by window
	debt    []count // leases: units settles charged past their reservations, by window
	lent    []count // leases, the limiter's clock: the most Redis may hold of a window beyond its count (Spec.lendBound)
	marks   []mark
	credits []credit
	wipes   []wipe
	slots   []held
	time    int64 // Redis's clock: the latest instant decided at
	key     string
}

// seal sorts s's slices and computes its key.
func (s state) seal() state {
	byWindow := func(a, b count) int {
		return cmp.Or(cmp.Compare(a.who, b.who), cmp.Compare(a.rate, b.rate), cmp.Compare(a.id, b.id))
	}
	slices.SortFunc(s.counts, byWindow)
	slices.SortFunc(s.extra, byWindow)
	slices.SortFunc(s.debt, byWindow)
	slices.SortFunc(s.lent, byWindow)
	slices.SortFunc(s.marks, func(a, b mark) int {
		return cmp.Or(cmp.Compare(a.who, b.who), cmp.Compare(a.rate, b.rate), cmp.Compare(a.id, b.id),
			cmp.Compare(a.n, b.n), cmp.Compare(a.till, b.till))
	})
	s.marks = slices.Compact(s.marks)
	slices.SortFunc(s.credits, func(a, b credit) int { return cmp.Compare(a.who, b.who) })
	slices.SortFunc(s.wipes, func(a, b wipe) int { return cmp.Compare(a.who, b.who) })
	slices.SortFunc(s.slots, func(a, b held) int { return cmp.Or(cmp.Compare(a.who, b.who), cmp.Compare(a.token, b.token)) })
	var b strings.Builder
	for _, c := range s.counts {
		fmt.Fprintf(&b, "c%d.%d.%d=%d/%d ", c.who, c.rate, c.id, c.n, c.epoch)
	}
	for _, c := range s.extra {
		fmt.Fprintf(&b, "x%d.%d=%d ", c.rate, c.id, c.n)
	}
	for _, c := range s.debt {
		fmt.Fprintf(&b, "d%d.%d=%d ", c.rate, c.id, c.n)
	}
	for _, c := range s.lent {
		fmt.Fprintf(&b, "g%d.%d=%d ", c.rate, c.id, c.n)
	}
	for _, m := range s.marks {
		fmt.Fprintf(&b, "m%d.%d.%d=%d<%d ", m.who, m.rate, m.id, m.n, m.till)
	}
	for _, c := range s.credits {
		fmt.Fprintf(&b, "l%d=%d<%d ", c.who, c.n, c.till)
	}
	for _, w := range s.wipes {
		fmt.Fprintf(&b, "r%d=%d..%d ", w.who, w.lo, w.hi)
	}
	for _, h := range s.slots {
		fmt.Fprintf(&b, "s%d.%d ", h.who, h.token)
	}
	fmt.Fprintf(&b, "t%d", s.time)
	s.key = b.String()
	return s
}

// clone returns a copy of s whose slices the caller may change.
func (s state) clone() state {
	return state{counts: slices.Clone(s.counts), extra: slices.Clone(s.extra), debt: slices.Clone(s.debt), lent: slices.Clone(s.lent), marks: slices.Clone(s.marks),
		credits: slices.Clone(s.credits), wipes: slices.Clone(s.wipes), slots: slices.Clone(s.slots), time: s.time}
}

// describeState is s as a person reads it: each window's count, the
// slots held, what the local state may still answer by.
func describeState(s state) string {
	var parts []string
	for _, c := range s.counts {
		where := ""
		if c.who >= 0 {
			where = "local" + strconv.Itoa(c.who) + " "
		}
		parts = append(parts, fmt.Sprintf("%sw%d#%d=%d", where, c.rate, c.id, c.n))
	}
	for _, c := range s.extra {
		parts = append(parts, fmt.Sprintf("w%d#%d leased before a reset=%d", c.rate, c.id, c.n))
	}
	for _, c := range s.lent {
		parts = append(parts, fmt.Sprintf("w%d#%d Redis may hold at most %d more", c.rate, c.id, c.n))
	}
	if n := len(s.slots); n > 0 {
		parts = append(parts, fmt.Sprintf("%d slots", n))
	}
	for _, m := range s.marks {
		parts = append(parts, fmt.Sprintf("r%d cache w%d#%d=%d until %d", m.who, m.rate, m.id, m.n, m.till))
	}
	for _, c := range s.credits {
		parts = append(parts, fmt.Sprintf("r%d old lease %d until %d", c.who, c.n, c.till))
	}
	for _, w := range s.wipes {
		where := "store"
		if w.who >= 0 {
			where = "local" + strconv.Itoa(w.who)
		}
		if w.lo == w.hi {
			parts = append(parts, fmt.Sprintf("%s reset at %d", where, w.lo))
		} else {
			parts = append(parts, fmt.Sprintf("%s reset in [%d, %d]", where, w.lo, w.hi))
		}
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

// Model returns the porcupine model of sp, partitioned by key: a key's
// state is its count in each window (the store's, and each fallback's),
// the slots it holds, and what local state (the over-limit cache, the
// leases) may still answer by; its step is the policy's rule, each
// window all-or-nothing, with debt and slots.
//
// A Reset starts one fresh budget: a return (a refund, a settle below its
// reservation) of a charge decided at or before the key's latest Reset
// returns nothing, as the stores' reset marks rule; on Redis's clock the
// Reset's instant is known only within its call, and each return and
// decision after it narrows it.
//
// Configurations without local state are held to the rule exactly, the
// count of every window included. Those with it are held to the rule plus
// exactly their documented bound:
//
//   - the over-limit cache (Spec.Stale): a refusal that the rule does not
//     give is one the replica's own cache may give: some decision of that
//     replica, at most Stale ms before on its clock, left a window full
//     and the window it would refuse in over limit − cost;
//   - leases (Spec.Lease): an admission never takes a window's charged
//     usage past its limit, except in debt a settle put it in and by what
//     another replica leased before a Reset or that settle (at most Lease
//     units each, within a second, net of the returns that go back to
//     that lease); a refusal may come with room left (a
//     lease strands units: docs/leases.md), the counts it shows bounded
//     as a peek's: what Redis holds is never less than what it
//     admitted, nor more than its limit but by what settles charged past
//     their reservations (leases and charges never exceed the limit),
//     nor, on the limiter's clock, more than it admitted since the key's
//     latest Reset but by a lease (Lease units) per admission since and
//     what returns gave back (Spec.lends);
//   - WithFailLocal (Spec.Divisor): a decision its fallback made is held
//     to the rule over that replica's fallback at limit/Divisor, and the
//     Redis call it replaced may or may not have been charged.
//
// The model is nondeterministic where the store may do either of two
// things (a window the memory store's clock stepped away from and back,
// an operation that may have been charged): porcupine checks every
// branch (NondeterministicModel).
func Model(sp Spec) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: byKey,
		Init:      func() []any { return []any{state{}.seal()} },
		Step: func(st, in, out any) []any {
			return sp.step(st.(state), in.(Input), out.(Output))
		},
		Equal: func(a, b any) bool { return a.(state).key == b.(state).key },
		Hash: func(s any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(s.(state).key))
			return h.Sum64()
		},
		DescribeOperation: func(in, out any) string { return describe(in.(Input), out.(Output)) },
		DescribeState:     func(s any) string { return describeState(s.(state)) },
	}
	return nm.ToModel()
}

// byKey partitions a history by key: keys share nothing.
func byKey(ops []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		k := op.Input.(Input).Key
		i, ok := idx[k]
		if !ok {
			i = len(parts)
			idx[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// step returns the states s may go to by in answered out: none when the
// store could not have answered so.
func (sp *Spec) step(s state, in Input, out Output) []any {
	var next []state
	switch in.Kind {
	case Allow, Peek, Reserve:
		next = sp.decide(s, in, out)
	case Settle:
		if in.Actual > in.Cost {
			next = sp.charge(s, in, in.Actual-in.Cost)
		} else {
			next = sp.giveBack(s, in, in.Cost-in.Actual)
		}
	case Refund:
		next = sp.giveBack(s, in, in.Cost)
	case Reset:
		next = sp.reset(s, in, out)
	case Acquire:
		next = sp.acquire(s, in, out)
	case Release:
		who := -1
		if in.Local {
			who = in.Replica
		}
		n := s.clone()
		n.slots = slices.DeleteFunc(n.slots, func(h held) bool { return h == held{who, in.Token} })
		next = []state{n}
	}
	if out.Unknown {
		// It may not have happened at all (or not yet): porcupine places
		// it no later than its Return.
		next = append(next, s.clone())
	}
	res := make([]any, 0, len(next))
	for _, n := range next {
		res = append(res, n.seal())
	}
	return res
}

// instants returns the instants an operation may have been decided at,
// on the store (who −1) or a fallback: exactly At on the limiter's clock;
// on Redis's, any in [At, AtHi] no earlier than the latest decided (its
// TIME moves on between calls), one per distinct set of windows; on a
// memory store whose clock stepped back, At or the start of a window at
// most the shortest window ahead (a table already there decides it at
// its start).
func (sp *Spec) instants(s *state, in *Input, who int) []int64 {
	if who < 0 && sp.ServerClock {
		lo := max(in.At, s.time)
		hi := max(in.AtHi, in.At)
		if lo > hi {
			return nil
		}
		at := []int64{lo}
		for t := lo; ; {
			next := hi + 1
			for _, w := range sp.Windows {
				next = min(next, (t/w+1)*w)
			}
			if next > hi {
				return at
			}
			at, t = append(at, next), next
		}
	}
	at := []int64{in.At}
	if (who >= 0 || sp.Store == "memory") && in.Epoch > 0 {
		for _, w := range sp.Windows {
			if s := (in.At/w + 1) * w; s-in.At <= sp.shortest() && !slices.Contains(at, s) {
				at = append(at, s)
			}
		}
	}
	return at
}

// decidedAt reports whether a decision answered as made at `at` is one
// the store may make for in: the instants allows it.
func (sp *Spec) decidedAt(s *state, in *Input, who int, at int64) bool {
	switch {
	case who < 0 && sp.ServerClock:
		return at >= max(in.At, s.time) && at <= max(in.AtHi, in.At)
	case who >= 0 || sp.Store == "memory":
		return at >= in.At && at <= in.At+sp.shortest() && (at == in.At || in.Epoch > 0)
	}
	return at == in.At
}

// windowCounts returns the counts of key's windows at instant at for who,
// one slice per possibility: a window a memory store's clock left and
// came back to since it was written may have been started again.
func (sp *Spec) windowCounts(s *state, who int, at int64, epoch int) [][]int64 {
	out := [][]int64{make([]int64, len(sp.Windows))}
	for i, w := range sp.Windows {
		id := floorDiv(at, w)
		c, ok := s.find(who, i, id)
		if !ok {
			continue
		}
		if sp.single(who) && epoch > c.epoch {
			// Either as it was, or started again: every branch so far
			// twice.
			n := len(out)
			for k := range n {
				alt := slices.Clone(out[k])
				out = append(out, alt)
			}
			for k := range n {
				out[k][i] = c.n
			}
			continue
		}
		for k := range out {
			out[k][i] = c.n
		}
	}
	return out
}

// find returns who's count of rate i in window id. (A store that keeps
// one window per rate holds no other: set drops it.)
func (s *state) find(who, i int, id int64) (count, bool) {
	for _, c := range s.counts {
		if c.who == who && c.rate == i && c.id == id {
			return c, true
		}
	}
	return count{}, false
}

// set stores who's count n of rate i in window id, dropping (for a store
// that keeps one window per rate) the rate's other window.
func (s *state) set(who, i int, id, n int64, epoch int, single bool) {
	s.counts = slices.DeleteFunc(s.counts, func(c count) bool {
		return c.who == who && c.rate == i && (c.id == id || single)
	})
	s.counts = append(s.counts, count{who: who, rate: i, id: id, n: n, epoch: epoch})
}

// floorDiv is ⌊a / b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// who returns whose counts an operation's answer comes from: −1 the
// store, r replica r's fallback.
func who(in *Input, out *Output) int {
	if out.Local || in.Local {
		return in.Replica
	}
	return -1
}
