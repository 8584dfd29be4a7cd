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
		var part []porcupine.Operation
		for _, op := range h.operations() {
			if op.Input.(Input).Key == key {
				part = append(part, op)
			}
		}
		_, info := porcupine.CheckOperationsVerbose(m, part, 0)
		var longest []int
		for _, l := range info.PartialLinearizations() {
			for _, order := range l {
				if len(order) > len(longest) {
					longest = order
				}
			}
		}
		placed := map[int]int{}
		st := m.Init()
		for k, i := range longest {
			placed[i] = k + 1
			_, st = m.Step(st, part[i].Input, part[i].Output)
		}
		idx := make([]int, len(part))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(part[x].Call, part[y].Call) })
		// The operation the order stops at: of those left out, the one
		// that returned first (every order must place it before anything
		// called after its return).
		stuck := -1
		for _, i := range idx {
			if _, ok := placed[i]; !ok && (stuck < 0 || part[i].Return < part[stuck].Return) {
				stuck = i
			}
		}
		fmt.Fprintf(&b, "key %s: %d operations; the model explains %d in the order numbered, then cannot place %s; state then: %s\n",
			key, len(part), len(longest), describe(part[stuck].Input.(Input), part[stuck].Output.(Output)), m.DescribeState(st))
		at := slices.Index(idx, stuck)
		for _, i := range idx[max(0, at-explainContext):min(len(idx), at+explainContext)] {
			op := part[i]
			ret := "never"
			if op.Return != Never {
				ret = fmt.Sprintf("%.3fms", float64(op.Return)/1e6)
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
