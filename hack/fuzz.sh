#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each. Targets are found
# in the sources (func FuzzX(f *testing.F) in *_test.go), not by running
# test binaries, so listing them starts nothing — no real planes. A package
# that does not build, or a target that finds a failure, fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-10s}"
mapfile -t files < <(git ls-files '*_test.go' | xargs grep -lE '^func Fuzz[A-Za-z0-9_]*\(' || true)
if [ "${#files[@]}" -eq 0 ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=0
for dir in $(printf '%s\n' "${files[@]}" | xargs -n1 dirname | sort -u); do
	for target in $(grep -hoE '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
		echo "fuzz ./$dir $target ($fuzztime)"
		for attempt in 1 2; do
			if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir" >"$log" 2>&1; then
				cat "$log"
				break
			fi
			# Go's fuzz coordinator (go1.26, fixed in go1.27:
			# https://go.dev/issue/75804) can fail a target with a bare
			# "context deadline exceeded" as -fuzztime ends, having found
			# nothing. That alone is not a finding (a written failing input,
			# or any other failure, is): the target is fuzzed once more, and
			# the raced attempt's verdict lines are left out so that a log
			# reader sees the race named, not a failing test.
			if grep -q 'Failing input written to' "$log" || ! grep -qE '^[[:space:]]+context deadline exceeded$' "$log"; then
				cat "$log"
				exit 1
			fi
			grep -vE '^(--- FAIL|FAIL|exit status|[[:space:]]+context deadline exceeded$)' "$log" || true
			echo "fuzz ./$dir $target: attempt $attempt ended in the fuzz coordinator's end-of-fuzztime race (go.dev/issue/75804) with no failing input: not a finding"
		done
		n=$((n + 1))
	done
done
echo "fuzzed $n targets for $fuzztime each"
