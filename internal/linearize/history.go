package linearize

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// A Kind names an operation of a history.
type Kind string

// The operations a history records: the limiter's (Allow, Peek, Reserve,
// Settle, Reset, Refund) and an in-flight cap's (Acquire, Release).
const (
	Allow   Kind = "allow"
	Peek    Kind = "peek"
	Reserve Kind = "reserve" // an Allow whose admission is settled later
	Settle  Kind = "settle"
	Reset   Kind = "reset"
	Refund  Kind = "refund"
	Acquire Kind = "acquire"
	Release Kind = "release"
)

// An Input is what an operation asked, and when on the replica's clock.
type Input struct {
	Kind    Kind   `json:"kind"`
	Replica int    `json:"replica"`
	Key     string `json:"key"`
	// Cost is the cost of an Allow, a Peek, a Reserve or a Refund, and
	// the cost a settled admission was reserved at.
	Cost int64 `json:"cost,omitempty"`
	// Actual is a Settle's actual cost.
	Actual int64 `json:"actual,omitempty"`
	// At is the instant of the operation, Unix ms: the replica's clock
	// (limiter.WithClock), read once, or with Redis's clock the earliest
	// instant its decision may have been made at, AtHi the latest.
	At   int64 `json:"at"`
	AtHi int64 `json:"at_hi,omitempty"`
	// Charged is when the admission a Settle or a Refund returns to was
	// decided (its Decision.DecidedAt, ms), and Local says that
	// WithFailLocal's fallback decided it.
	Charged int64 `json:"charged,omitempty"`
	Local   bool  `json:"local,omitempty"`
	// Token names a slot: the id of the Acquire that took it.
	Token int `json:"token,omitempty"`
	// Epoch counts the steps back of the memory store's clock before the
	// operation: a window the clock left and came back to may have lost
	// its counts (see Model).
	Epoch int `json:"epoch,omitempty"`
}

// An Output is what an operation answered.
type Output struct {
	// Unknown: the operation failed, and may or may not have happened
	// (a decision whose reply was lost may have been charged).
	Unknown bool `json:"unknown,omitempty"`
	Allowed bool `json:"allowed,omitempty"`
	// Used is, per window of the policy, what the key has used after the
	// decision (limiter.WindowStatus.Used), this one included when
	// admitted; for an Acquire, the slots held after it.
	Used []int64 `json:"used,omitempty"`
	// At is the instant the decision was made at (Decision.DecidedAt),
	// Unix ms.
	At int64 `json:"decided_at,omitempty"`
	// Local: WithFailLocal's fallback decided, Redis could not.
	Local bool `json:"local,omitempty"`
}

// An Op is one operation of a history: who called, what, when (ns since
// the recording began) and what came back. An operation that failed
// (Output.Unknown) may have taken effect once or not at all: its Return
// is the latest it may have taken effect (Never: at any time).
type Op struct {
	Client int    `json:"client"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	In     Input  `json:"in"`
	Out    Output `json:"out"`
}

// Never is the return time of a failed operation that may take effect at
// any time.
const Never = math.MaxInt64

// A Fault is one fault injected while a history was recorded, from Start
// to End (ns, as an Op's times).
type Fault struct {
	Kind   string `json:"kind"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Detail string `json:"detail,omitempty"`
}

// A History is what one run recorded, with what its model needs, as a
// replay file stores it.
type History struct {
	// Name is the configuration's, Seed the workload's.
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
	Spec Spec   `json:"spec"`
	// Want is the verdict a replay must reach: "Ok" or "Illegal".
	Want string `json:"want,omitempty"`
	// Note says why the file is kept.
	Note   string  `json:"note,omitempty"`
	Ops    []Op    `json:"ops"`
	Faults []Fault `json:"faults,omitempty"`
}

// Keys returns the keys of h's operations, sorted.
func (h *History) Keys() []string {
	var keys []string
	for _, op := range h.Ops {
		if !slices.Contains(keys, op.In.Key) {
			keys = append(keys, op.In.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// Counts returns how many operations h holds and how many of them failed.
func (h *History) Counts() (ops, unknown int) {
	for _, op := range h.Ops {
		if op.Out.Unknown {
			unknown++
		}
	}
	return len(h.Ops), unknown
}

// Save writes h to path as JSON.
func (h *History) Save(path string) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("linearize: encode %s: %w", h.Name, err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads a history Save wrote.
func Load(path string) (*History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("linearize: decode %s: %w", path, err)
	}
	if err := h.Spec.check(); err != nil {
		return nil, fmt.Errorf("linearize: %s: %w", path, err)
	}
	return &h, nil
}

// describe returns an operation as a line a person reads: "r1 allow k0
// ×2 @1000 → ok [3 7]".
func describe(in Input, out Output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "r%d %s %s", in.Replica, in.Kind, in.Key)
	switch in.Kind {
	case Allow, Peek, Reserve, Refund:
		fmt.Fprintf(&b, " ×%d", in.Cost)
	case Settle:
		fmt.Fprintf(&b, " %d→%d", in.Cost, in.Actual)
	case Acquire, Release:
		fmt.Fprintf(&b, " #%d", in.Token)
	}
	fmt.Fprintf(&b, " @%d", in.At)
	if in.AtHi > in.At {
		fmt.Fprintf(&b, "..%d", in.AtHi)
	}
	if in.Kind == Settle || in.Kind == Refund {
		fmt.Fprintf(&b, " of @%d", in.Charged)
	}
	if in.Local {
		b.WriteString(" (local)")
	}
	switch {
	case out.Unknown:
		b.WriteString(" → ?")
	case in.Kind == Settle || in.Kind == Refund || in.Kind == Reset || in.Kind == Release:
		b.WriteString(" → done")
	case out.Allowed:
		fmt.Fprintf(&b, " → ok %v", out.Used)
	default:
		fmt.Fprintf(&b, " → no %v", out.Used)
	}
	if out.Local {
		b.WriteString(" (local)")
	}
	if out.At != 0 && out.At != in.At {
		fmt.Fprintf(&b, " decided @%d", out.At)
	}
	return b.String()
}
