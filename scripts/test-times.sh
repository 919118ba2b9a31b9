#!/usr/bin/env bash
# test-times.sh — what the test suite costs, package by package.
#
# Runs `go test -count=1` on each package of the module, one package at a
# time (after compiling every test binary once), and prints per package
# the wall time, the CPU time of the go command and the test binary
# (user + system, from /usr/bin/time) and the 1-minute load average before
# and after; then the sums and the whole suite's CPU time divided by the
# number of cores, the least wall time `go test ./...` can take on an idle
# machine. On a shared machine compare the CPU column: wall times grow
# with the load, CPU times hardly.
#
# Usage: scripts/test-times.sh [PACKAGE...]   (default: ./...)
# Needs /usr/bin/time (apt-get install time).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "test-times.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
mapfile -t list < <(go list "${pkgs[@]}")
go test -count=1 -run '^$' "${pkgs[@]}" >/dev/null
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%-58s %8s %8s %6s %s\n' package wall_s cpu_s exit load
total_wall=0 total_cpu=0
for p in "${list[@]}"; do
	l0=$(cut -d' ' -f1 /proc/loadavg)
	set +e
	/usr/bin/time -f '%e %U %S' -o "$tmp" go test -count=1 -timeout 30m "$p" >/dev/null 2>&1
	rc=$?
	set -e
	l1=$(cut -d' ' -f1 /proc/loadavg)
	read -r wall user sys < <(tail -1 "$tmp")
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
	printf '%-58s %8.1f %8s %6s %s-%s\n' "${p#github.com/chexpercept/chexpercept/}" "$wall" "$cpu" "$rc" "$l0" "$l1"
	total_wall=$(awk -v a="$total_wall" -v b="$wall" 'BEGIN { print a + b }')
	total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN { print a + b }')
done
cores=$(nproc)
printf 'sum: %.0f s wall one package at a time, %.0f s CPU; CPU / %d cores = %.0f s\n' \
	"$total_wall" "$total_cpu" "$cores" "$(awk -v c="$total_cpu" -v n="$cores" 'BEGIN { print c / n }')"
