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
n=0
for dir in $(printf '%s\n' "${files[@]}" | xargs -n1 dirname | sort -u); do
	for target in $(grep -hoE '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort -u); do
		echo "fuzz ./$dir $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir"
		n=$((n + 1))
	done
done
echo "fuzzed $n targets for $fuzztime each"
