#!/usr/bin/env bash
# Runs every fuzz target of the root module and the lab's module for a bounded time each
# (default 20s): `make fuzz FUZZTIME=1m`. New inputs that fail are written
# by go test under the package's testdata/fuzz, to be committed as seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-20s}
status=0
for pkg in $(go list ./... ./example/lab/...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort -u || true)
  for t in $targets; do
    echo "== $pkg $t ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" "$pkg"; then
      status=1
    fi
  done
done
exit $status
