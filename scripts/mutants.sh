#!/usr/bin/env bash
# Plants each bug kept under internal/linearize/mutants/ (NN-name.patch,
# a header saying what it breaks, what catches it, and `# Run:` the
# configurations of TestLinearizable to run) in a throwaway copy of the
# tree, runs the history checker's short run there, restricted to those
# configurations (go test -race -count=1 -failfast, the test binary built
# once per mutant and run MUTANT_RUNS times), and wants every run to fail.
# First a control: the unpatched copy, every configuration a mutant names,
# once, must pass. Prints a line per run and a table (mutant, runs,
# caught, by which configuration); exits 1 unless the control passed and
# every run of every mutant failed. See docs/redis.md, "Every history
# checked for linearizability".
#
# The copy is of the tracked files as they are in the caller's tree,
# committed or not (git stash create, which changes neither the tree nor
# the stash); untracked files are left out, but the patches are read
# from the caller's tree, new ones too. The copy goes in a temporary
# directory, with the tests' own temporary files, removed at the end.
#
#   MUTANT_RUNS=3      runs of each mutant (default 1)
#   MUTANTS=cache      only the mutants whose names match this (grep -E)
#   MUTANT_SEED=N      -seed N for every run (default: each run draws one
#                      and logs it, as the short run does)
#   MUTANT_CONTROL=0   skip the control run
#   MUTANT_KEEP=1      keep the copy and the logs, and say where
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
runs=${MUTANT_RUNS:-1}
only=${MUTANTS:-}
seed=${MUTANT_SEED:-}
go=${GO:-go}

patches=()
for p in "$root"/internal/linearize/mutants/*.patch; do
  name=$(basename "$p" .patch)
  if [ -z "$only" ] || grep -qE -- "$only" <<<"$name"; then
    patches+=("$p")
  fi
done
if [ ${#patches[@]} -eq 0 ]; then
  echo "mutants: none match '$only'" >&2
  exit 1
fi

rev=$(git stash create)
rev=${rev:-HEAD}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mutants.XXXXXX")
if [ "${MUTANT_KEEP:-0}" = 1 ]; then
  trap 'echo "mutants: kept $tmp"' EXIT
else
  trap 'rm -rf "$tmp"' EXIT
fi
tree=$tmp/tree
mkdir -p "$tree" "$tmp/logs" "$tmp/tmp"
git archive "$rev" | tar -x -C "$tree"
what="HEAD $(git rev-parse --short HEAD)"
[ "$rev" = HEAD ] || what="$what and the uncommitted changes"
echo "mutants: ${#patches[@]} mutant(s), $runs run(s) each, in a copy of $what"

# pattern returns -run's pattern for the configurations named.
pattern() { echo "^TestLinearizable\$/^($(tr ' ' '|' <<<"$*"))\$/"; }

# build builds the copy's test binary of internal/linearize, with -race;
# runOnce runs it with a -run pattern, verbose, into a log.
build() {
  (cd "$tree/internal/linearize" && "$go" test -race -c -o "$tmp/linearize.test" .) >"$1" 2>&1
}
runOnce() { # log pattern
  local args=(-test.run "$2" -test.count=1 -test.failfast -test.timeout 15m -test.v)
  if [ -n "$seed" ]; then args+=(-seed "$seed"); fi
  (cd "$tree/internal/linearize" && TMPDIR="$tmp/tmp" "$tmp/linearize.test" "${args[@]}") >"$1" 2>&1
}
# failedBy names what failed in a run's log: the failing configurations,
# each with why (the model's verdict, Illegal or Unknown, or the failure
# bound), or how the binary ended.
failedBy() {
  local by cfg why
  by=$(sed -nE 's/^ *--- FAIL: TestLinearizable\/([^/]+)\/seed=.*/\1/p' "$1" | sort -u |
    while read -r cfg; do
      why=$(sed -nE "s/^ +[a-z_]+\.go:[0-9]+: $cfg seed [0-9]+: (Illegal|Unknown)\$/\1/p" "$1" | head -1)
      if grep -qE "^ +[a-z_]+\.go:[0-9]+: $cfg seed [0-9]+: [0-9]+ of [0-9]+ operations failed outside" "$1"; then
        why="${why:+$why+}failures"
      fi
      echo "$cfg (${why:-?})"
    done | paste -sd, - | sed 's/,/, /g')
  if [ -z "$by" ] && grep -q '^panic: test timed out' "$1"; then
    by=timeout
  elif [ -z "$by" ] && grep -q '^panic:' "$1"; then
    by=panic
  fi
  echo "${by:-other}"
}
seedOf() { sed -nE 's/.*seeds ([0-9]+) to.*/\1/p' "$1" | head -1; }

start=$SECONDS
status=0
if [ "${MUTANT_CONTROL:-1}" != 0 ]; then
  all=$(sed -n 's/^# Run: //p' "${patches[@]}" | tr ' ' '\n' | sort -u | paste -sd' ' -)
  log=$tmp/logs/control.log
  t0=$SECONDS
  if ! build "$log"; then
    echo "control: the unpatched copy does not build:"; tail -20 "$log"; exit 1
  fi
  if runOnce "$log" "$(pattern "$all")"; then
    echo "control: unpatched, $all: passed (seed $(seedOf "$log"), $((SECONDS - t0))s)"
  else
    echo "control: unpatched, $all: FAILED by $(failedBy "$log") (seed $(seedOf "$log")): no mutant can be judged"
    grep -E '^\s*(--- FAIL|linearize_test|.*\.go:[0-9]+:)' "$log" | head -20
    exit 1
  fi
fi

rows=()
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  cfgs=$(sed -n 's/^# Run: //p' "$p")
  if [ -z "$cfgs" ]; then
    echo "$name: no '# Run:' line in its header"; status=1; rows+=("$name|0|0|no Run line"); continue
  fi
  if ! (cd "$tree" && git apply "$p") 2>"$tmp/logs/$name.apply"; then
    echo "$name: does not apply:"; cat "$tmp/logs/$name.apply"; status=1; rows+=("$name|0|0|does not apply"); continue
  fi
  caught=0
  by=()
  if ! build "$tmp/logs/$name.build"; then
    echo "$name: does not build:"; tail -20 "$tmp/logs/$name.build"; status=1; rows+=("$name|0|0|does not build")
  else
    for ((i = 1; i <= runs; i++)); do
      log=$tmp/logs/$name.$i.log
      t0=$SECONDS
      if runOnce "$log" "$(pattern "$cfgs")"; then
        echo "$name run $i/$runs: NOT caught by $cfgs (seed $(seedOf "$log"), $((SECONDS - t0))s)"
      else
        b=$(failedBy "$log")
        caught=$((caught + 1))
        by+=("$b")
        echo "$name run $i/$runs: caught by $b (seed $(seedOf "$log"), $((SECONDS - t0))s)"
      fi
    done
    [ "$caught" -eq "$runs" ] || status=1
    summary=-
    if [ "$caught" -gt 0 ]; then
      summary=$(printf '%s\n' "${by[@]}" | sort | uniq -c | sed -E 's/^ *([0-9]+) (.*)/\2 x\1/' | paste -sd';' - | sed 's/;/; /g')
    fi
    rows+=("$name|$runs|$caught|$summary")
  fi
  # Back to the unpatched files, for the next mutant.
  (cd "$tree" && git apply -R "$p")
done

echo
printf '%-36s %5s %7s  %s\n' mutant runs caught by
for r in "${rows[@]}"; do
  IFS='|' read -r name n c by <<<"$r"
  printf '%-36s %5s %7s  %s\n' "$name" "$n" "$c/$n" "$by"
done
echo "mutants: $((SECONDS - start))s"
exit $status
