package linearize

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// A Verdict is what checking one history found.
type Verdict struct {
	Result porcupine.CheckResult
	// Illegal names the keys whose operations no order explains.
	Illegal []string
	info    porcupine.LinearizationInfo
}

// Check checks h against its spec's model, for at most timeout
// (porcupine's Unknown when that runs out; 0: no limit).
func Check(h *History, timeout time.Duration) Verdict {
	m := Model(h.Spec)
	ops := h.operations()
	res, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	v := Verdict{Result: res, info: info}
	if res == porcupine.Illegal {
		// A partition is illegal when its longest partial order leaves
		// some of its operations out.
		for _, part := range byKey(ops) {
			one, _ := porcupine.CheckOperationsVerbose(m, part, timeout)
			if one == porcupine.Illegal {
				v.Illegal = append(v.Illegal, part[0].Input.(Input).Key)
			}
		}
		slices.Sort(v.Illegal)
	}
	return v
}

// operations returns h's operations as porcupine takes them.
func (h *History) operations() []porcupine.Operation {
	ops := make([]porcupine.Operation, len(h.Ops))
	for i, op := range h.Ops {
		ops[i] = porcupine.Operation{ClientId: op.Client, Input: op.In, Call: op.Call, Output: op.Out, Return: op.Return}
	}
	return ops
}

// Visualize writes porcupine's HTML view of h and v to path: each
// client's operations on a time line, the longest order the model
// explains, the state after each step, and the faults as annotations.
func (h *History) Visualize(v Verdict, path string) error {
	info := v.info
	var notes []porcupine.Annotation
	for _, f := range h.Faults {
		notes = append(notes, porcupine.Annotation{Tag: "faults", Start: f.Start, End: f.End,
			Description: f.Kind, Details: f.Detail, BackgroundColor: "#f6c6c6"})
	}
	info.AddAnnotations(notes)
	return porcupine.VisualizePath(Model(h.Spec), info, path)
}

// explainContext is how many operations Explain shows either side of
// the one the model cannot place.
const explainContext = 25

// Explain returns, for each illegal key, as text a person reads, the
// longest order of its operations the model explains, the state it ends
// in, the operation it cannot place, and the operations around that one
// in call order, numbered by their place in the order.
func (h *History) Explain(v Verdict) string {
	var b strings.Builder
	m := Model(h.Spec)
	for _, key := range v.Illegal {
		part := h.partition(key)
		longest, stuck := stuckAt(m, part)
		placed := map[int]int{}
		st := m.Init()
		for k, i := range longest {
			placed[i] = k + 1
			_, st = m.Step(st, part[i].Input, part[i].Output)
		}
		fmt.Fprintf(&b, "key %s: %d operations; the model explains %d in the order numbered, then cannot place %s; state then: %s\n",
			key, len(part), len(longest), describe(part[stuck].Input.(Input), part[stuck].Output.(Output)), m.DescribeState(st))
		idx := byCall(part)
		at := slices.Index(idx, stuck)
		for _, i := range idx[max(0, at-explainContext):min(len(idx), at+explainContext)] {
			op := part[i]
			ret := fmt.Sprintf("%.3fms", float64(op.Return)/1e6)
			switch {
			case op.Return == Never:
				ret = "never"
			case op.Output.(Output).Unknown:
				ret = "by " + ret
			}
			mark := "   -"
			if k, ok := placed[i]; ok {
				mark = fmt.Sprintf("%4d", k)
			}
			if i == stuck {
				mark = "  =>"
			}
			fmt.Fprintf(&b, "  %s [%.3fms, %s] c%d %s\n", mark, float64(op.Call)/1e6, ret, op.ClientId,
				describe(op.Input.(Input), op.Output.(Output)))
		}
	}
	return b.String()
}

// partition returns the operations of key, as porcupine takes them.
func (h *History) partition(key string) []porcupine.Operation {
	var part []porcupine.Operation
	for _, op := range h.operations() {
		if op.Input.(Input).Key == key {
			part = append(part, op)
		}
	}
	return part
}

// stuckAt returns the longest order of part m explains, and the
// operation it stops at: of those left out, the one that returned first
// (every order must place it before anything called after its return).
func stuckAt(m porcupine.Model, part []porcupine.Operation) (longest []int, stuck int) {
	_, info := porcupine.CheckOperationsVerbose(m, part, 0)
	for _, l := range info.PartialLinearizations() {
		for _, order := range l {
			if len(order) > len(longest) {
				longest = order
			}
		}
	}
	stuck = -1
	for _, i := range byCall(part) {
		if !slices.Contains(longest, i) && (stuck < 0 || part[i].Return < part[stuck].Return) {
			stuck = i
		}
	}
	return longest, stuck
}

// byCall returns the indexes of ops in call order.
func byCall(ops []porcupine.Operation) []int {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(ops[x].Call, ops[y].Call) })
	return idx
}

// Shrink returns h cut down to what keeps it illegal, as a replay file
// small enough to keep: the first illegal key's operations called before
// the one the model cannot place returned. (A history no order explains
// stays so with the operations called after that return left out, as
// long as the check agrees; else the key's operations are kept whole.)
func (h *History) Shrink(v Verdict) *History {
	if len(v.Illegal) == 0 {
		return h
	}
	key := v.Illegal[0]
	part := h.partition(key)
	_, stuck := stuckAt(Model(h.Spec), part)
	small := *h
	small.Ops = nil
	for _, op := range h.Ops {
		if op.In.Key == key && (stuck < 0 || op.Call <= part[stuck].Return) {
			small.Ops = append(small.Ops, op)
		}
	}
	if Check(&small, checkTimeout).Result != porcupine.Illegal {
		small.Ops = nil
		for _, op := range h.Ops {
			if op.In.Key == key {
				small.Ops = append(small.Ops, op)
			}
		}
	}
	return &small
}

// checkTimeout bounds the check of one history (a cut one, in Shrink).
const checkTimeout = 60 * time.Second
