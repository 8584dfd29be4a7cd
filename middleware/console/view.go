package console

import (
	"strconv"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A report is a key's usage as the page and the JSON show it. The page
// names its cells by their JSON paths (data-path="limiters.0.windows.1.used"),
// so that the script that updates it while it is open reads each value
// where the JSON has it, and finds a path missing when the report's
// shape has changed (a store gone away), which it answers by reloading.
type report struct {
	Key       string        `json:"key"`
	At        string        `json:"at"`
	Limiters  []limiterView `json:"limiters"`
	Caps      []capView     `json:"caps"`
	Failed    bool          `json:"failed"`
	CSRFToken string        `json:"csrf_token,omitempty"`
	Done      string        `json:"done,omitempty"`
	Notice    string        `json:"notice,omitempty"`  // what a change did, as the page says it
	Refused   *refusedView  `json:"refused,omitempty"` // with Config.Refusals, on a lookup
}

type limiterView struct {
	Policy  string       `json:"policy"`
	Windows []windowView `json:"windows,omitempty"`
	Error   string       `json:"error,omitempty"`
}

type windowView struct {
	Window    string `json:"window"`
	Limit     int64  `json:"limit"`
	Used      int64  `json:"used"`
	Remaining int64  `json:"remaining"`
	Debt      int64  `json:"debt"`
	Reset     string `json:"reset"`       // RFC 3339, UTC
	ResetIn   string `json:"reset_in"`    // "4m 10s"
	ResetZone string `json:"reset_local"` // in the window's own zone
	Zone      string `json:"zone"`
}

type capView struct {
	Policy    string `json:"policy"`
	Limit     int64  `json:"limit,omitempty"`
	Held      int64  `json:"held"`
	Remaining int64  `json:"remaining"`
	Error     string `json:"error,omitempty"`
}

// newReport builds the report of key's readings at the instant at.
func newReport(key string, at time.Time, ls, cs []reading) *report {
	r := &report{Key: key, At: at.UTC().Format(time.RFC3339), Limiters: make([]limiterView, len(ls)), Caps: make([]capView, len(cs))}
	for i, rd := range ls {
		v := limiterView{Policy: rd.name}
		if rd.err != nil {
			v.Error, r.Failed = rd.err.Error(), true
		}
		for j, w := range rd.u.Windows {
			v.Windows = append(v.Windows, newWindowView(w, rd.u.Policy.Rate(j), rd.u.At))
		}
		r.Limiters[i] = v
	}
	for i, rd := range cs {
		v := capView{Policy: rd.name}
		if rd.err != nil {
			v.Error, r.Failed = rd.err.Error(), true
		} else {
			m := rd.u.Policy.MaxInFlight()
			v.Limit, v.Held, v.Remaining = m, rd.u.Held, max(0, m-rd.u.Held)
		}
		r.Caps[i] = v
	}
	return r
}

// resetLayout writes a window's reset in its zone.
const resetLayout = "2006-01-02 15:04:05 MST"

// newWindowView describes w, a window of rate r, as read at at: its
// reset in its own zone (a calendar rate's; UTC for a fixed window,
// whose windows are cut from the Unix epoch), and its debt, what was
// used past the limit.
func newWindowView(w limiter.WindowStatus, r limiter.Rate, at time.Time) windowView {
	loc := time.UTC
	if _, l, ok := r.Calendar(); ok {
		loc = l
	}
	reset := w.ResetAt
	return windowView{
		Window: w.Name, Limit: w.Limit, Used: w.Used, Remaining: w.Remaining, Debt: max(0, w.Used-w.Limit),
		Reset: reset.UTC().Format(time.RFC3339), ResetIn: span(reset.Sub(at)),
		ResetZone: reset.In(loc).Format(resetLayout), Zone: loc.String(),
	}
}

// span writes d for a person, to the second and in at most two units:
// "0s", "45s", "4m 10s", "3h 20m", "27d 4h".
func span(d time.Duration) string {
	s := int64(max(0, (d+time.Second-1)/time.Second)) // a window ends at the latest then
	units := []struct {
		n    int64
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}}
	var parts []string
	for _, u := range units {
		if q := s / u.n; q > 0 || (u.n == 1 && len(parts) == 0) {
			parts = append(parts, strconv.FormatInt(q, 10)+u.name)
			s -= q * u.n
		} else if len(parts) > 0 {
			break
		}
		if len(parts) == 2 {
			break
		}
	}
	return strings.Join(parts, " ")
}
