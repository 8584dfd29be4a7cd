package headers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestWriteCalendar: every header of a calendar window derives from the
// decision: X-RateLimit-Reset is the local boundary, Retry-After the
// seconds to it, the draft's t the same, and w the length of the window
// current at the decision (a day of 23 hours on the spring change, 25 on
// the autumn one, 24 otherwise, a month of 31 days), named after the
// period whatever its length.
func TestWriteCalendar(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	day := limiter.MustPolicy("plan", limiter.PerDayIn(3, paris), limiter.PerMinute(600))
	month := limiter.MustPolicy("plan", limiter.PerMonthIn(3, paris), limiter.PerMinute(600))
	w := newWriter(t, WithDraftHeaders())
	for _, tt := range []struct {
		name   string
		p      *limiter.Policy
		at     time.Time
		reset  time.Time
		length time.Duration
		unit   string
		// minuteLeft is the minute window's t: the seconds to its end.
		minuteLeft int64
	}{
		{"spring_forward_day", day, time.Date(2026, 3, 29, 20, 0, 0, 0, paris), time.Date(2026, 3, 30, 0, 0, 0, 0, paris), 23 * time.Hour, "day", 60},
		{"autumn_day", day, time.Date(2026, 10, 25, 20, 0, 0, 0, paris), time.Date(2026, 10, 26, 0, 0, 0, 0, paris), 25 * time.Hour, "day", 60},
		{"ordinary_day", day, time.Date(2026, 7, 31, 23, 59, 30, 0, paris), time.Date(2026, 8, 1, 0, 0, 0, 0, paris), 24 * time.Hour, "day", 30},
		{"january", month, time.Date(2026, 1, 31, 12, 0, 0, 0, paris), time.Date(2026, 2, 1, 0, 0, 0, 0, paris), 31 * 24 * time.Hour, "month", 60},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t, tt.p, tt.at)
			d := allow(t, l, 4) // the fourth of 3 is refused by the day or month
			if d.Allowed || d.Window != tt.length || !d.ResetAt.Equal(tt.reset) {
				t.Fatalf("decision %+v: want refused until %v, a window of %v", d, tt.reset, tt.length)
			}
			secs := int64(tt.reset.Sub(tt.at) / time.Second)
			name := `"plan-` + tt.unit + `"`
			h := http.Header{}
			w.Write(h, &d)
			for field, want := range map[string]string{
				"X-RateLimit-Limit":     "3",
				"X-RateLimit-Remaining": "0",
				"X-RateLimit-Reset":     strconv.FormatInt(tt.reset.Unix(), 10),
				"Retry-After":           strconv.FormatInt(secs, 10),
				"RateLimit":             name + ";r=0;t=" + strconv.FormatInt(secs, 10) + `, "plan-1m";r=597;t=` + strconv.FormatInt(tt.minuteLeft, 10),
				"RateLimit-Policy":      name + ";q=3;w=" + strconv.FormatInt(int64(tt.length/time.Second), 10) + `, "plan-1m";q=600;w=60`,
			} {
				if got := h.Get(field); got != want {
					t.Errorf("%s = %q, want %q", field, got, want)
				}
			}
			pw := newWriter(t, WithProblemJSON("", ""))
			rec := httptest.NewRecorder()
			pw.WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &d)
			var body struct {
				Detail   string   `json:"detail"`
				Violated []string `json:"violated-policies"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			wantDetail := "rate limit of 3 per " + tt.unit + " exceeded; retry in " + strconv.FormatInt(secs, 10) + " seconds"
			if body.Detail != wantDetail || len(body.Violated) != 1 || body.Violated[0] != "plan-"+tt.unit {
				t.Errorf("problem body %s: want detail %q, violated plan-%s", rec.Body.String(), wantDetail, tt.unit)
			}
		})
	}
}

// TestWriteCalendarEveryWindow lists each window with its own reset, and
// names two days of two zones apart; X-RateLimit-* keep the deciding
// window alone.
func TestWriteCalendarEveryWindow(t *testing.T) {
	paris, tokyo := storetest.Zone(t, "Europe/Paris"), storetest.Zone(t, "Asia/Tokyo")
	p := limiter.MustPolicy("plan", limiter.PerDayIn(10, paris), limiter.PerDayIn(20, tokyo), limiter.Rate{Limit: 30, Window: 24 * time.Hour})
	at := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC) // 14:00 in Paris, 21:00 in Tokyo
	l, _ := newLimiter(t, p, at)
	d := allow(t, l, 1)
	w := newWriter(t, WithDraftHeaders())
	h := http.Header{}
	w.Write(h, &d)
	if got, want := h.Get("RateLimit"), `"plan-day@Europe/Paris";r=9;t=36000, "plan-day@Asia/Tokyo";r=19;t=10800, "plan-1d";r=29;t=43200`; got != want {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
	if got, want := h.Get("RateLimit-Policy"), `"plan-day@Europe/Paris";q=10;w=86400, "plan-day@Asia/Tokyo";q=20;w=86400, "plan-1d";q=30;w=86400`; got != want {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	// The deciding window, in X-RateLimit-*, is Paris's day (the least
	// remaining), not the fixed day of the same length.
	if got, want := h.Get("X-RateLimit-Remaining")+" "+h.Get("X-RateLimit-Limit"), "9 10"; got != want {
		t.Errorf("X-RateLimit-Remaining and -Limit = %q, want %q", got, want)
	}
}

// TestWriteCalendarPolicyValueFollowsTheDay: the RateLimit-Policy value
// of a calendar policy, kept between writes, changes when the current
// window's length does, and not otherwise.
func TestWriteCalendarPolicyValueFollowsTheDay(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	p := limiter.MustPolicy("plan", limiter.PerDayIn(1000, paris))
	w := newWriter(t, WithDraftHeaders())
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 3, 28, 12, 0, 0, 0, paris), `"plan";q=1000;w=86400`},
		{time.Date(2026, 3, 29, 12, 0, 0, 0, paris), `"plan";q=1000;w=82800`},
		{time.Date(2026, 3, 30, 0, 0, 0, 0, paris), `"plan";q=1000;w=86400`},
		{time.Date(2026, 3, 29, 23, 59, 59, 0, paris), `"plan";q=1000;w=82800`},
	} {
		_, d := limiter.Decide(p, [limiter.MaxWindows]limiter.State{}, tt.at, 1)
		h := http.Header{}
		w.Write(h, &d)
		if got := h.Get("RateLimit-Policy"); got != tt.want {
			t.Errorf("at %v: RateLimit-Policy = %q, want %q", tt.at, got, tt.want)
		}
	}
}
