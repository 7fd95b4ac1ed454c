#!/bin/sh
# Runs every fuzz target for FUZZTIME (60s by default) under a 2 GiB
# memory limit: an input that makes a parser allocate more fails instead
# of swapping. A failing input is kept by go test in the package's
# testdata/fuzz/TARGET directory, so it runs in every `make test` from
# then on: commit it with the fix.
set -eu
FUZZTIME=${FUZZTIME:-60s}
GO=${GO:-go}
export GOMEMLIMIT=2GiB
ulimit -v $((2 * 1024 * 1024 + 512 * 1024)) # 2.5 GiB of address space: the runtime's own reservations come on top of the heap
status=0
for pkg in $(${GO} list ./...); do
	dir=$(${GO} list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "== $pkg $target"
		${GO} test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" || status=1
	done
done
exit $status
