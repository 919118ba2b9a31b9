#!/usr/bin/env bash
# bench-eval.sh — the evaluator's performance figures (issue 4).
#
# Runs the two Go benchmarks of internal/eval, each in its own process so
# that the peak-memory figure (getrusage maxrss) belongs to one benchmark:
#   scheduling: 315 records with small images against serve-baseline with
#               50 ms latency at concurrency 32; target ideal-frac >= 0.90
#   bytes:      105 records, 350 distinct ~0.8 MB phantom-like PNGs, zero
#               latency; request MB/s and calls/s at concurrency 32 and 64,
#               peak memory at concurrency 64 (target < 1 GiB)
# serve-baseline runs in a separate process in both.
#
# Usage: scripts/bench-eval.sh [COUNT]   (COUNT runs of each, default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-1}"

run() {
	go test -run '^$' -bench "^$1\$" -benchtime 1x -count "$count" -timeout 30m ./internal/eval |
		grep "^$1" || { echo "benchmark $1 failed" >&2; exit 1; }
}

metric() { # metric NAME LINE: the value printed before the unit NAME
	awk -v u="$1" '{ for (i = 2; i <= NF; i++) if ($i == u) print $(i-1) }' <<<"$2"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo
while read -r line; do
	echo "scheduling (315 records, 50 ms latency, concurrency 32):"
	echo "  calls:                    $(metric calls "$line")"
	echo "  call rate:                $(metric calls/s "$line") calls/s (ideal $(metric ideal-calls/s "$line"))"
	echo "  share of ideal rate:      $(metric ideal-frac "$line") (target >= 0.90)"
	echo "  observed call latency:    $(metric call-latency-ms "$line") ms (server adds 50 ms)"
	echo "  share at observed latency: $(metric ideal-frac-at-observed-latency "$line")"
done < <(run BenchmarkEvalScheduling)
echo
while read -r line; do
	echo "bytes ($(metric images "$line") distinct images of $(metric MB/image "$line") MB, zero latency):"
	echo "  concurrency 32:           $(metric MB/s@c32 "$line") MB/s of requests, $(metric calls/s@c32 "$line") calls/s"
	echo "  concurrency 64:           $(metric MB/s@c64 "$line") MB/s of requests, $(metric calls/s@c64 "$line") calls/s"
	echo "  peak heap in use:         $(metric peak-heap-MiB@c32 "$line") MiB at 32, $(metric peak-heap-MiB@c64 "$line") MiB at 64"
	echo "  peak RSS (whole process): $(metric maxrss-MiB "$line") MiB (target < 1024)"
done < <(run BenchmarkEvalBytes)
