package redisstore

import (
	"context"
	"regexp"
	"testing"
)

// crossesFunc finds the definition of crosses in a script's source.
var crossesFunc = regexp.MustCompile(`(?s)\nlocal function crosses\(c, d\)\n.*?\nend\n`)

// TestCrossesMatchesBitXor checks the power-of-two test of take.lua and
// settle.lua, as the scripts define it, against the form it replaced,
// `c + d >= 2^31 or bit.bxor(c, c + d) > c`, run on the same Redis: the
// scripts must not use the bit library, which miniredis lacks, and must
// answer as they did. Its named rows say what a crossing is; the sweep
// runs both forms over every count to 1100 and both sides of every power
// of two to 2^53, with every step to 70 and both sides of every power of
// two. The scripts keep counts and steps whole and at least zero (a
// corrupt count is refused before it is charged).
func TestCrossesMatchesBitXor(t *testing.T) {
	c := sharedClient(t)
	fn := map[string]string{}
	for name, src := range map[string]string{"take.lua": takeSource, "settle.lua": settleSource} {
		m := crossesFunc.FindString(src)
		if m == "" {
			t.Fatalf("%s defines no crosses(c, d)", name)
		}
		fn[name] = m
	}
	if fn["take.lua"] != fn["settle.lua"] {
		t.Fatalf("take.lua and settle.lua define crosses differently:\n%s\n%s", fn["take.lua"], fn["settle.lua"])
	}
	ctx := context.Background()
	eval := func(t *testing.T, body string, args ...any) any {
		t.Helper()
		v, err := c.Eval(ctx, fn["take.lua"]+body, nil, args...).Result()
		if err != nil {
			t.Fatalf("EVAL: %v", err)
		}
		return v
	}

	rows := []struct {
		name string
		c, d int64
		want bool
	}{
		{"zero_plus_zero", 0, 0, false},
		{"zero_to_one", 0, 1, true},
		{"one_to_two", 1, 1, true},
		{"two_to_three", 2, 1, false},
		{"three_to_four", 3, 1, true},
		{"four_to_seven", 4, 3, false},
		{"four_to_eight", 4, 4, true},
		{"five_to_nine_past_eight", 5, 4, true},
		{"no_step_at_a_power", 8, 0, false},
		{"2^30-1_to_2^30", 1<<30 - 1, 1, true},
		{"2^30_to_2^31-1", 1 << 30, 1<<30 - 1, false},
		{"to_2^31", 1 << 30, 1 << 30, true},
		{"past_2^31_always", 1 << 31, 1, true},
		{"at_2^53", 1 << 53, 0, true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			got := eval(t, `return crosses(tonumber(ARGV[1]), tonumber(ARGV[2])) and 1 or 0`, r.c, r.d) == int64(1)
			if got != r.want {
				t.Fatalf("crosses(%d, %d) = %v, want %v", r.c, r.d, got, r.want)
			}
		})
	}

	t.Run("sweep_against_bxor", func(t *testing.T) {
		var counts, steps []any
		for v := range int64(1101) {
			counts = append(counts, v)
		}
		for v := range int64(71) {
			steps = append(steps, v)
		}
		for k := 1; k <= 53; k++ {
			p := int64(1) << k
			for _, v := range []int64{p - 2, p - 1, p, p + 1} {
				counts = append(counts, v)
				if k <= 31 {
					steps = append(steps, v)
				}
			}
		}
		args := append([]any{len(counts)}, append(counts, steps...)...)
		v := eval(t, `
local nc = tonumber(ARGV[1])
local bad, n, crossed = {}, 0, 0
for i = 2, nc + 1 do
  local c = tonumber(ARGV[i])
  for j = nc + 2, #ARGV do
    local d = tonumber(ARGV[j])
    local old = c + d >= 2147483648 or bit.bxor(c, c + d) > c
    local new = crosses(c, d)
    n = n + 1
    if new then crossed = crossed + 1 end
    if old ~= new and #bad < 10 then
      bad[#bad + 1] = ARGV[i] .. '+' .. ARGV[j] .. (old and ': bxor crosses' or ': bxor does not')
    end
  end
end
return {n, crossed, bad}`, args...)
		out := v.([]any)
		n, crossed, bad := out[0].(int64), out[1].(int64), out[2].([]any)
		for _, b := range bad {
			t.Errorf("crosses(%v) differs from bit.bxor", b)
		}
		if want := int64(len(counts) * len(steps)); n != want || crossed == 0 || crossed == n {
			t.Fatalf("%d cases, %d crossing; want %d cases, some crossing and some not", n, crossed, want)
		}
		t.Logf("%d cases (%d counts × %d steps), %d crossing", n, len(counts), len(steps), crossed)
	})
}
