# Every target runs from the repository root. The metrics adapters
# (middleware/metrics, middleware/otelmetrics), the gRPC interceptor
# (middleware/grpclimit), the support console's browser tests
# (middleware/console/browsertest), the lab (example/lab), the
# observability programs (example/observe), the gRPC and plans examples
# (example/grpc, example/plans), the migration recipes run against the
# limiters they replace (example/migrating), the history checker
# (internal/linearize) and the tests that need what a consumer must not
# (internal/consumer) are modules of their own, joined to the root module
# by go.work, so that the root go.mod requires neither Prometheus,
# OpenTelemetry, gRPC, a browser driver, another limiter, porcupine,
# miniredis nor a test-only module; PKGS names their packages beside the
# root module's. bench/ is a module of its own too.
GO       ?= go
MODULES  ?= limiter/redisstore/miniredistest middleware/metrics middleware/otelmetrics middleware/grpclimit middleware/console/browsertest example/grpc example/plans example/lab example/migrating example/observe internal/consumer internal/linearize
PKGS     ?= ./... $(addprefix ./,$(addsuffix /...,$(MODULES)))
FUZZTIME ?= 20s
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test test-oldest-go bench bench-peers fuzz soak jepsen mutants lint cover redis chromium console-screenshot

# The whole suite, race detector on. The Redis-backed tests need a Redis
# at 127.0.0.1:6379 and the redis-server binary: `redis` makes sure of both.
# The console's browser tests need Chromium: `chromium` installs Debian's
# when there is none (under CI=true they fail without it, never skip).
# bench/'s tests need its peers' setups, so here they are only compiled
# and vetted (make bench-peers runs them).
test: redis chromium
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd bench && $(GO) vet ./...

# The library's tests on the oldest supported Go (go.mod's go line), out of
# the workspace so that each module builds with its own go.mod's
# requirements only, as a consumer's build would: the root module, then
# every nested module in MODULES. The toolchain comes from the module
# proxy on first use. No race detector: make test runs it on the current Go.
OLDEST_GO ?= go1.25.0
test-oldest-go: redis chromium
	GOTOOLCHAIN=$(OLDEST_GO) GOWORK=off $(GO) test -count=1 -timeout 20m ./...
	set -e; for m in $(MODULES); do \
		(cd $$m && GOTOOLCHAIN=$(OLDEST_GO) GOWORK=off $(GO) test -count=1 -timeout 20m ./...); \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 $(PKGS)

# Comparisons with other rate limiters live in a nested module so that
# their dependencies never enter ours.
bench-peers:
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -count 6 ./...

# Every fuzz target for FUZZTIME each.
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# The soak test alone, for SOAK_DURATION (default 30s; make test runs it
# at its default length too).
SOAK_DURATION ?= 2m
soak:
	SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -timeout 15m -run TestSoak -v ./internal/soak

# The history checker's long run (docs/redis.md, "Every history checked
# for linearizability"): every configuration with JEPSEN_SEEDS seeds from
# JEPSEN_SEED, longer histories, and the failovers with and without
# redisstore.WithReplicaAcks. make test runs its short run (one seed,
# drawn at random and logged, short histories). A history no order
# explains is saved under internal/linearize/testdata/failed/, for
# TestReplay, with a view and a text account in a temporary directory.
JEPSEN_SEED  ?= 1
JEPSEN_SEEDS ?= 5
jepsen: redis
	cd internal/linearize && $(GO) test -count=1 -timeout 60m -v -run 'TestLinearizable|TestFailover|TestReplay' . \
		-args -long -seed $(JEPSEN_SEED) -seeds $(JEPSEN_SEEDS)

# The history checker against the bugs kept under
# internal/linearize/mutants/ (docs/redis.md, "Every history checked for
# linearizability"): each planted in a throwaway copy of the tree, the
# short run of the configurations its header names run MUTANT_RUNS times
# there, every run required to fail; first a control run of the unpatched
# copy, required to pass. MUTANTS (a pattern) picks some. Not in make test:
# minutes.
MUTANT_RUNS ?= 1
MUTANTS     ?=
mutants: redis
	MUTANT_RUNS=$(MUTANT_RUNS) MUTANTS='$(MUTANTS)' GO=$(GO) ./scripts/mutants.sh

lint:
	./scripts/check-tree.sh
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATICCHECK) $(PKGS)
	$(GO) run ./internal/apicount -max 261

cover: redis
	$(GO) test -count=1 -coverprofile=cover.out $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1

# Start a throwaway local Redis if none answers.
redis:
	./scripts/ensure-redis.sh

# Install Debian's Chromium if no Chromium is on PATH.
chromium:
	./scripts/ensure-chromium.sh

# The picture of the support console in docs/console.md, taken by its
# browser test (TestScreenshot) in headless Chromium: run after a change
# to the page, and commit docs/console.png.
console-screenshot: chromium
	cd middleware/console/browsertest && CONSOLE_SCREENSHOT=$(CURDIR)/docs/console.png \
		$(GO) test -count=1 -run '^TestScreenshot$$' .
