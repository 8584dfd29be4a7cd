package limiter

import (
	"errors"
	"math/bits"
	"strings"
	"testing"
	"time"
)

func TestNewPolicyValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		pname   string
		rates   []Rate
		wantErr string // substring; empty means valid
	}{
		{"one_rate", "api", []Rate{PerMinute(10)}, ""},
		{"layered", "api", []Rate{PerMinute(100), PerSecond(5)}, ""},
		{"empty_name_defaults", "", []Rate{PerSecond(1)}, ""},
		{"one_millisecond_window", "x", []Rate{{Limit: 1, Window: time.Millisecond}}, ""},
		{"no_rates", "x", nil, "has no rate"},
		{"zero_limit", "x", []Rate{{Limit: 0, Window: time.Second}}, "limit 0 must be > 0"},
		// A rate is named by its place, counted from 1, and its value.
		{"bad_rate_named_by_place_and_value", "by-ip", []Rate{PerMinute(5), {Limit: 0, Window: time.Minute}},
			`policy "by-ip" rate #2 (0/1m0s): limit 0 must be > 0`},
		{"negative_limit", "x", []Rate{{Limit: -1, Window: time.Second}}, "must be > 0"},
		{"zero_window", "x", []Rate{{Limit: 1, Window: 0}}, "shorter than 1ms"},
		{"negative_window", "x", []Rate{{Limit: 1, Window: -time.Second}}, "shorter than 1ms"},
		{"sub_millisecond_window", "x", []Rate{{Limit: 1, Window: 999 * time.Microsecond}}, "shorter than 1ms"},
		{"fractional_millisecond_window", "x", []Rate{{Limit: 1, Window: 1500 * time.Microsecond}}, "whole number of milliseconds"},
		{"exact_budget_edge_ok", "x", []Rate{{Limit: 1 << 53 / 1000, Window: time.Second}}, ""},
		{"exact_budget_exceeded", "x", []Rate{{Limit: 1<<53/1000 + 1, Window: time.Second}}, "exact integer budget"},
		{"max_limit_ok", "x", []Rate{{Limit: MaxLimit, Window: time.Millisecond}}, ""},
		{"sixteen_digit_limit", "huge", []Rate{{Limit: 1 << 53, Window: time.Millisecond}}, "exceeds MaxLimit"},
		{"max_limit_plus_one", "x", []Rate{{Limit: MaxLimit + 1, Window: time.Millisecond}}, "exceeds MaxLimit 999999999999999"},
		{"huge_limit_no_overflow", "x", []Rate{{Limit: 1<<63 - 1, Window: time.Duration(1<<63 - 1 - (1<<63-1)%int64(time.Millisecond))}}, "exact integer budget"},
		{"duplicate_window", "x", []Rate{PerSecond(1), PerSecond(2)}, "two rates for window 1s"},
		{"too_many_rates", "x", []Rate{PerSecond(1), PerMinute(2), PerHour(3), {Limit: 4, Window: 2 * time.Hour}, {Limit: 5, Window: 3 * time.Hour}}, "at most 4"},
		{"bad_name_char", "a b", []Rate{PerSecond(1)}, "has character"},
		{"name_with_colon", "a:b", []Rate{PerSecond(1)}, "has character"},
		{"name_too_long", strings.Repeat("n", 65), []Rate{PerSecond(1)}, "at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPolicy(tt.pname, tt.rates...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewPolicy(%q, %v) = %v, want no error", tt.pname, tt.rates, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewPolicy(%q, %v) = %v, want error containing %q", tt.pname, tt.rates, p, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("error %v does not wrap ErrInvalidPolicy", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestPolicyAccessors(t *testing.T) {
	t.Parallel()
	rates := []Rate{PerMinute(100), PerSecond(5)}
	p := MustPolicy("api", rates...)
	rates[0].Limit = 1 // the policy keeps its own copy
	if got, want := p.ID(), "api:60000:1000"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
	if got, want := p.String(), "api: 100/1m0s + 5/1s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if p.NumRates() != 2 || p.Rate(0) != PerMinute(100) || p.Rate(1) != PerSecond(5) {
		t.Errorf("%d rates, want 2: 100/1m then 5/1s", p.NumRates())
	}
	if got := MustPolicy("", PerSecond(1)).Name(); got != "default" {
		t.Errorf("Name() of unnamed policy = %q, want default", got)
	}
	var zero *Policy
	if got := zero.String(); got != "<invalid policy>" {
		t.Errorf("nil String() = %q", got)
	}
}

func TestMustPolicyPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("MustPolicy with a zero limit did not panic")
		}
	}()
	MustPolicy("x", Rate{Window: time.Second})
}

func FuzzNewPolicy(f *testing.F) {
	f.Add("api", int64(10), int64(time.Second), int64(0), int64(0))
	f.Add("x", int64(1<<53), int64(time.Millisecond), int64(5), int64(time.Minute))
	f.Add("", int64(-1), int64(1500*time.Microsecond), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, name string, l1, w1, l2, w2 int64) {
		rates := []Rate{{Limit: l1, Window: time.Duration(w1)}}
		if l2 != 0 || w2 != 0 {
			rates = append(rates, Rate{Limit: l2, Window: time.Duration(w2)})
		}
		p, err := NewPolicy(name, rates...)
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("error %v does not wrap ErrInvalidPolicy", err)
			}
			return
		}
		for i := range p.NumRates() {
			r := p.Rate(i)
			ms := r.Window.Milliseconds()
			if r.Limit <= 0 || ms < 1 || r.Window%time.Millisecond != 0 {
				t.Fatalf("accepted invalid rate %+v", r)
			}
			if r.Limit > MaxLimit {
				t.Fatalf("accepted rate %+v whose limit has more than 15 digits", r)
			}
			if hi, lo := bits.Mul64(uint64(r.Limit), uint64(ms)); hi != 0 || lo > 1<<53 {
				t.Fatalf("accepted rate %+v whose limit × window-ms exceeds 2^53", r)
			}
		}
	})
}
