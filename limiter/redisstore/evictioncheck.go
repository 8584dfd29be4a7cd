package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// riskyPolicies are the maxmemory policies under which a flood of fresh
// client keys turns against the limit, and why (internal/flood's
// TestEvictionPolicies measures each; docs/redis.md has the table). Every
// key the store writes has an expiry, so volatile-* and allkeys-* pick
// among the same keys; LFU evicts the flood's keys, each touched once,
// first. Without maxmemory nothing is evicted nor refused: nothing to
// report.
var riskyPolicies = map[string]string{
	"noeviction":      "at maxmemory every decision fails with OOM",
	"allkeys-lru":     "a flood of fresh keys evicts idle counters first, spent clients' among them, whose budgets start again",
	"volatile-lru":    "a flood of fresh keys evicts idle counters first, spent clients' among them, whose budgets start again",
	"volatile-ttl":    "a window's counters share one expiry, so a flood of fresh keys evicts any of them, spent clients' among them",
	"allkeys-random":  "a flood of fresh keys evicts counters at random, and their clients' budgets start again",
	"volatile-random": "a flood of fresh keys evicts counters at random, and their clients' budgets start again",
}

// recommendedPolicy is what a risk description advises.
const recommendedPolicy = "volatile-lfu"

// memoryPolicyRisk returns "" when every server c reaches (each master of
// a Cluster, each shard of a Ring, else c) is safe under a flood of fresh
// keys, or a line describing the first risky one by address (maxmemory set
// with a policy of riskyPolicies) and how many more there are. A server
// that refuses CONFIG GET (an ACL user without +config, a managed service)
// counts as safe; an error means some server could not be asked, the
// others' risks still returned. The check is advice, never a failure.
func memoryPolicyRisk(ctx context.Context, c redis.UniversalClient) (string, error) {
	var (
		mu    sync.Mutex
		risks []string
		errs  []error
	)
	check := func(ctx context.Context, addr string, cmd redis.Cmdable) {
		risk, err := serverPolicyRisk(ctx, addr, cmd)
		mu.Lock()
		defer mu.Unlock()
		if risk != "" {
			risks = append(risks, risk)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	each := func(ctx context.Context, n *redis.Client) error {
		check(ctx, n.Options().Addr, n)
		return nil // one server's failure must not stop the others' checks
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, each)
	case *redis.Ring:
		err = c.ForEachShard(ctx, each)
	case *redis.Client:
		check(ctx, c.Options().Addr, c)
	default:
		check(ctx, "the server", c)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("redisstore: memory policy check: %w", err))
	}
	if len(risks) == 0 {
		return "", errors.Join(errs...)
	}
	slices.Sort(risks)
	risk := risks[0]
	if len(risks) > 1 {
		risk += fmt.Sprintf(" (and %d more servers)", len(risks)-1)
	}
	return risk, errors.Join(errs...)
}

// serverPolicyRisk asks one server for its memory settings and judges them
// with policyRisk. A refusal is "" and no error.
func serverPolicyRisk(ctx context.Context, addr string, c redis.Cmdable) (string, error) {
	cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		var refused redis.Error // errors.As, not AsType: the module supports Go 1.25
		if errors.As(err, &refused) {
			return "", nil
		}
		return "", fmt.Errorf("redisstore: CONFIG GET maxmemory on %s: %w", addr, err)
	}
	return policyRisk(addr, cfg), nil
}

// policyRisk judges the CONFIG GET maxmemory* reply of the server at addr:
// "" when safe (or when the reply does not say), else a one-line
// description of the risk.
func policyRisk(addr string, cfg map[string]string) string {
	bytes, err := strconv.ParseInt(cfg["maxmemory"], 10, 64)
	if err != nil || bytes <= 0 {
		return ""
	}
	policy := cfg["maxmemory-policy"]
	why, risky := riskyPolicies[policy]
	if !risky {
		return ""
	}
	return fmt.Sprintf("%s: maxmemory %d with maxmemory-policy %s: %s: use %s",
		addr, bytes, policy, why, recommendedPolicy)
}
