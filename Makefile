# Every target runs from the repository root. The metrics adapters
# (middleware/metrics, middleware/otelmetrics), the gRPC interceptor
# (middleware/grpclimit), the lab (example/lab), the observability
# programs (example/observe), the gRPC example (example/grpc) and the
# history checker (internal/linearize) are modules of their own, joined to
# the root module by go.work, so that the root go.mod requires neither
# Prometheus, OpenTelemetry, gRPC nor porcupine; PKGS names their packages
# beside the root module's. bench/ is a module of its own too.
GO       ?= go
MODULES  ?= middleware/metrics middleware/otelmetrics middleware/grpclimit example/grpc example/lab example/observe internal/linearize
PKGS     ?= ./... $(addprefix ./,$(addsuffix /...,$(MODULES)))
FUZZTIME ?= 20s
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test test-oldest-go bench bench-peers fuzz soak jepsen lint cover redis

# The whole suite, race detector on. The Redis-backed tests need a Redis
# at 127.0.0.1:6379 and the redis-server binary: `redis` makes sure of both.
# bench/'s tests need its peers' setups, so here they are only compiled
# and vetted (make bench-peers runs them).
test: redis
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd bench && $(GO) vet ./...

# The library's tests on the oldest supported Go (go.mod's go line), out of
# the workspace so that each module builds with its own go.mod's
# requirements only, as a consumer's build would: the root module, then
# every nested module in MODULES. The toolchain comes from the module
# proxy on first use. No race detector: make test runs it on the current Go.
OLDEST_GO ?= go1.25.0
test-oldest-go: redis
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

# The history checker's long run (docs/linearizability.md): every
# configuration with JEPSEN_SEEDS seeds from JEPSEN_SEED, longer histories,
# and the failovers with and without redisstore.WithReplicaAcks. make test
# runs its short run (one seed, short histories). A history no order
# explains is saved under internal/linearize/testdata/failed/, for
# TestReplay, with a view and a text account in a temporary directory.
JEPSEN_SEED  ?= 1
JEPSEN_SEEDS ?= 5
jepsen: redis
	cd internal/linearize && $(GO) test -count=1 -timeout 60m -v -run 'TestLinearizable|TestFailover|TestReplay' . \
		-args -long -seed $(JEPSEN_SEED) -seeds $(JEPSEN_SEEDS)

lint:
	./scripts/check-tree.sh
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATICCHECK) $(PKGS)

cover: redis
	$(GO) test -count=1 -coverprofile=cover.out $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1

# Start a throwaway local Redis if none answers.
redis:
	./scripts/ensure-redis.sh
