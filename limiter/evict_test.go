package limiter

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"
)

// spend takes key's whole budget under p at now.
func spend(t *testing.T, st *MemoryStore, p *Policy, key string, now time.Time) {
	t.Helper()
	for i := range p.Rate(0).Limit {
		if d := take(t, st, p, key, now); !d.Allowed {
			t.Fatalf("%s refused at request %d of its first %d", key, i+1, p.Rate(0).Limit)
		}
	}
	if d := take(t, st, p, key, now); d.Allowed {
		t.Fatalf("%s admitted past its limit of %d", key, p.Rate(0).Limit)
	}
}

// TestMemoryStoreFloodKeepsSpentBudgets: 500 clients spend their budget,
// then twice the bound in fresh keys each make one request. The store
// evicts the flood's fresh counters, which cost least to forget, and keeps
// the spent ones: at most 1% of the spent clients are admitted again in
// the window. Evicting an arbitrary counter admitted about 70% of them.
func TestMemoryStoreFloodKeepsSpentBudgets(t *testing.T) {
	t.Parallel()
	const (
		bound   = 4096
		clients = 500
	)
	st := newTestStore(t, WithMaxKeys(bound), WithShards(16))
	p := MustPolicy("api", PerMinute(3))
	for i := range clients {
		spend(t, st, p, "client-"+strconv.Itoa(i), noon)
	}
	for i := range 2 * bound {
		if d := take(t, st, p, "fresh-"+strconv.Itoa(i), noon); !d.Allowed {
			t.Fatalf("fresh key %d refused", i)
		}
	}
	if got, want := st.Stats().Evictions, uint64(clients+2*bound-bound); got != want {
		t.Fatalf("Evictions = %d, want %d (every counter past the bound evicts one)", got, want)
	}
	again := 0
	for i := range clients {
		if take(t, st, p, "client-"+strconv.Itoa(i), noon.Add(30*time.Second)).Allowed {
			again++
		}
	}
	t.Logf("%d of %d spent clients admitted again after a flood of %d fresh keys", again, clients, 2*bound)
	if again > clients/100 {
		t.Fatalf("got %d of %d spent clients admitted again after a flood of %d fresh keys, want at most %d",
			again, clients, 2*bound, clients/100)
	}
}

// TestMemoryStoreFloodAttackerStaysSpent: an attacker at his limit
// alternates requests from his own key with requests from fresh IPv6 /64s,
// four times the bound of them. None of his own key's requests is admitted
// for the rest of the window.
func TestMemoryStoreFloodAttackerStaysSpent(t *testing.T) {
	t.Parallel()
	const bound = 1024
	st := newTestStore(t, WithMaxKeys(bound), WithShards(4))
	p := MustPolicy("api", PerMinute(3))
	const attacker = "2001:db8:ffff:ffff::/64"
	spend(t, st, p, attacker, noon)
	extra := 0
	for i := range 4 * bound {
		at := noon.Add(time.Duration(i) * time.Millisecond)
		take(t, st, p, fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff), at)
		if take(t, st, p, attacker, at).Allowed {
			extra++
		}
	}
	t.Logf("%d of the attacker's %d requests admitted past his limit", extra, 4*bound)
	if extra != 0 {
		t.Fatalf("got %d of the attacker's %d requests admitted past his limit, want 0", extra, 4*bound)
	}
	if st.Stats().Evictions == 0 {
		t.Fatal("the flood evicted nothing: the store was not at its bound")
	}
}

// TestMemoryStoreLayeredFloodKeepsSpentBudgets: under a layered policy a
// spent client's counter of the spent window is kept, whatever happens to
// its other window's, and a flood's two counters per key are evicted
// before it.
func TestMemoryStoreLayeredFloodKeepsSpentBudgets(t *testing.T) {
	t.Parallel()
	const (
		bound   = 4096
		clients = 300
	)
	st := newTestStore(t, WithMaxKeys(bound), WithShards(16))
	p := MustPolicy("api", PerMinute(3), PerHour(100))
	for i := range clients {
		spend(t, st, p, "client-"+strconv.Itoa(i), noon)
	}
	for i := range bound {
		if d := take(t, st, p, "fresh-"+strconv.Itoa(i), noon); !d.Allowed {
			t.Fatalf("fresh key %d refused", i)
		}
	}
	if got, want := st.Stats().Evictions, uint64(2*clients+2*bound-bound); got != want {
		t.Fatalf("Evictions = %d, want %d (every counter past the bound evicts one)", got, want)
	}
	again := 0
	for i := range clients {
		if take(t, st, p, "client-"+strconv.Itoa(i), noon.Add(30*time.Second)).Allowed {
			again++
		}
	}
	if again > clients/100 {
		t.Fatalf("got %d of %d spent clients admitted again after a flood of %d fresh keys, want at most %d",
			again, clients, bound, clients/100)
	}
	// The next minute starts every budget afresh; the hour keeps counting
	// for the clients whose hour counter survived.
	if d := take(t, st, p, "client-0", noon.Add(time.Minute)); !d.Allowed {
		t.Fatalf("client-0 in the next minute: %+v, want admitted", d)
	}
}

// TestMemoryStoreEvictsCheapestAcrossPolicies: counters of two policies
// with one window length share a table; the one furthest from its limit
// goes first, whatever the limits are.
func TestMemoryStoreEvictsCheapestAcrossPolicies(t *testing.T) {
	t.Parallel()
	st := newTestStore(t, WithMaxKeys(MaxWindows), WithShards(1))
	small := MustPolicy("small", PerMinute(2))
	big := MustPolicy("big", PerMinute(1000))
	spend(t, st, small, "spent", noon) // 2 of 2
	for range 500 {
		take(t, st, big, "busy", noon) // 500 of 1000
	}
	take(t, st, small, "half", noon) // 1 of 2
	take(t, st, big, "light", noon)  // 1 of 1000
	take(t, st, small, "new", noon)  // the store is full: one must go
	if st.Stats().Evictions != 1 {
		t.Fatalf("Evictions = %d, want 1", st.Stats().Evictions)
	}
	for _, tt := range []struct {
		key  string
		p    *Policy
		want int64 // remaining after one more request
	}{
		{"spent", small, 0},
		{"busy", big, 499},
		{"half", small, 0},
		{"new", small, 0},
		{"light", big, 999}, // evicted: 1 of 1000 was the least spent
	} {
		d := take(t, st, tt.p, tt.key, noon)
		if tt.key == "spent" {
			if d.Allowed {
				t.Fatalf("spent key admitted again: %+v", d)
			}
			continue
		}
		if d.Remaining != tt.want {
			t.Fatalf("%s: remaining %d after one more request, want %d", tt.key, d.Remaining, tt.want)
		}
	}
}

func TestPackCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		count, limit int64
		wantSpent    uint64
	}{
		{"none", 0, 3, 0},
		{"one_of_three", 1, 3, 85},
		{"two_of_three", 2, 3, 170},
		{"spent", 3, 3, maxSpent},
		{"one_of_a_thousand_rounds_to_none", 1, 1000, 0},
		{"two_of_a_thousand_rounds_up", 2, 1000, 1},
		{"max_limit_spent", MaxLimit, MaxLimit, maxSpent},
		{"one_of_max_limit", 1, MaxLimit, 0},
		{"just_under_half_of_max_limit", MaxLimit / 2, MaxLimit, 127},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := packCount(tt.count, rateSpan(tt.limit))
			if got := countOf(v); got != tt.count {
				t.Fatalf("countOf(packCount(%d, limit %d)) = %d, want %d", tt.count, tt.limit, got, tt.count)
			}
			if got := uint64(v) >> countBits; got != tt.wantSpent {
				t.Fatalf("packCount(%d, limit %d) spent %d, want %d", tt.count, tt.limit, got, tt.wantSpent)
			}
		})
	}
}

// rateSpan returns the span of a rate of limit per millisecond, the
// window that admits every limit up to MaxLimit.
func rateSpan(limit int64) span {
	return MustPolicy("p", Rate{Limit: limit, Window: time.Millisecond}).spans[0]
}

// FuzzPackCount: a slot value gives its count back; its spent level is
// maxSpent × count / limit to within rounding; and under one limit a
// larger count never packs to a smaller value, so it is never evicted
// before a smaller one.
func FuzzPackCount(f *testing.F) {
	f.Add(int64(1), int64(2), int64(3))
	f.Add(int64(0), MaxLimit, MaxLimit)
	f.Fuzz(func(t *testing.T, a, b, limit int64) {
		if limit <= 0 || limit > MaxLimit || a < 0 || b < 0 {
			t.Skip()
		}
		a, b = a%(limit+1), b%(limit+1)
		if a > b {
			a, b = b, a
		}
		sp := rateSpan(limit)
		va, vb := packCount(a, sp), packCount(b, sp)
		if countOf(va) != a || countOf(vb) != b {
			t.Fatalf("limit %d: counts %d, %d packed and read back as %d, %d", limit, a, b, countOf(va), countOf(vb))
		}
		if uint64(va) > uint64(vb) {
			t.Fatalf("limit %d: count %d packs to %#x, above count %d's %#x", limit, a, va, b, vb)
		}
		exact := float64(maxSpent) * float64(b) / float64(limit)
		if got := float64(uint64(vb) >> countBits); math.Abs(got-exact) > 0.5+1e-6 {
			t.Fatalf("limit %d, count %d: spent %v, want %v rounded", limit, b, got, exact)
		}
	})
}

func TestCountsCheapest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entries map[uint64]int64
		skip    uint64
		want    uint64 // the hash chosen; 0 for none
	}{
		{"empty", nil, 5 << 60, 0},
		{"only_skip", map[uint64]int64{5 << 60: 1}, 5 << 60, 0},
		{"skip_is_cheapest", map[uint64]int64{5 << 60: 1, 6 << 60: 9}, 5 << 60, 6 << 60},
		{"least_of_all", map[uint64]int64{1 << 60: 7, 2 << 60: 3, 3 << 60: 2, 9 << 60: 8}, 5 << 60, 3 << 60},
		{"unsigned_order", map[uint64]int64{1 << 60: -1, 2 << 60: math.MaxInt64}, 5 << 60, 2 << 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tab counts
			for h, c := range tt.entries {
				tab.set(h, c)
			}
			for from := range uint64(64) {
				from <<= 58
				i, v, ok := tab.cheapest(tt.skip, from, 64)
				if !ok {
					if tt.want != 0 {
						t.Fatalf("cheapest(skip %#x, from %#x) found nothing, want %#x", tt.skip, from, tt.want)
					}
					continue
				}
				if got := tab.slots[i].h; got != tt.want || v != uint64(tt.entries[got]) {
					t.Fatalf("cheapest(skip %#x, from %#x) = %#x holding %d, want %#x", tt.skip, from, got, v, tt.want)
				}
			}
		})
	}
}
