#!/usr/bin/env bash
# bench-eval.sh — the evaluator's performance figures.
#
# Runs the Go benchmarks of internal/eval, each in its own process so that
# the peak-memory figure (getrusage maxrss) belongs to one benchmark:
#   scheduling: 630 records with small images against serve-baseline with
#               50 ms latency at concurrency 32, first run (empty image
#               memo, no response cache); the call phase and the whole run
#               (eval.Run from entry to return: load, validate, plan,
#               verify, ask, derived files) as shares of the ideal
#               calls × 50 ms ÷ 32; target >= 0.90 for the call phase,
#               >= 0.95 for the whole run (median of COUNT runs), beside
#               the schedule's own bound (list scheduling of the records'
#               turns in dispatch order, equal call times). Then the
#               same with every image file distinct (2,100 decodes in the
#               first run), run twice: first run and memo run
#   bytes:      105 records, 350 distinct ~0.8 MB phantom-like PNGs, zero
#               latency; request MB/s and calls/s at concurrency 32 and 64,
#               peak memory at concurrency 64 (target < 700 MiB; also
#               measured with /usr/bin/time -v)
#   full (--full only): 2,100 records with 7,000 distinct ~0.8 MB images,
#               in process (--provider baseline --model oracle, concurrency
#               16), run twice with one cache directory: when the first
#               call left (target < 1 s) and the whole run; the second run
#               only hashes the images (target <= 20 s)
# serve-baseline runs in a separate process in scheduling and bytes.
#
# Usage: scripts/bench-eval.sh [--full] [--full-dir DIR] [COUNT]
#   COUNT           runs of each benchmark (default 1)
#   --full          also run the full-size start-up benchmark; without
#                   --full-dir its benchmark (about 5.8 GB) is written to a
#                   temporary directory and removed afterwards
#   --full-dir DIR  use the benchmark in DIR (a phantom build, or one this
#                   script wrote there before); if DIR has no
#                   chexpercept.json the phantom-like one is written there
#                   once and kept for later runs
set -euo pipefail
cd "$(dirname "$0")/.."
full=0 full_dir="" count=1
while [ $# -gt 0 ]; do
	case "$1" in
	--full) full=1 ;;
	--full-dir) full=1 full_dir="${2:?--full-dir needs a directory}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	[0-9]*) count="$1" ;;
	*) echo "bench-eval.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
[ -z "$full_dir" ] || full_dir=$(realpath -m "$full_dir") # the benchmarks run in internal/eval

# The benchmarks run from one compiled test binary, so that /usr/bin/time
# measures the benchmark's process (and its serve-baseline child), not
# the go command's compiler and linker.
bin_dir=$(mktemp -d /tmp/chexpercept-bench-eval.XXXXXX)
trap 'rm -rf "$bin_dir"' EXIT
go test -c -o "$bin_dir/eval.test" ./internal/eval
run() { # run NAME [TIMEFILE]: one benchmark; with TIMEFILE, under /usr/bin/time -v
	local timer=()
	if [ -n "${2:-}" ] && [ -x /usr/bin/time ]; then
		timer=(/usr/bin/time -v -o "$2")
	fi
	(cd internal/eval && "${timer[@]}" "$bin_dir/eval.test" -test.run '^$' -test.bench "^$1\$" -test.benchtime 1x \
		-test.count "$count" -test.timeout 60m) | grep "^$1" || { echo "benchmark $1 failed" >&2; exit 1; }
}
time_rss() { # peak RSS in MiB from a /usr/bin/time -v file
	if [ -s "$1" ]; then awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$1"; else echo "n/a"; fi
}

metric() { # metric NAME LINE: the value printed before the unit NAME
	awk -v u="$1" '{ for (i = 2; i <= NF; i++) if ($i == u) print $(i-1) }' <<<"$2"
}

median() { # median of the numbers on stdin
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo
wholes=()
while read -r line; do
	echo "scheduling (630 records, shared small images, 50 ms latency, concurrency 32, first run, no response cache):"
	echo "  calls:                    $(metric calls "$line"), ideal $(metric ideal-s "$line") s"
	echo "  schedule bound:           $(metric schedule-bound "$line") of ideal in eval's dispatch order (longest first), $(metric schedule-bound-file-order "$line") in benchmark order (list scheduling of the records' turns on 32 workers, equal call times)"
	echo "  call phase:               $(metric calls/s "$line") calls/s (ideal $(metric ideal-calls/s "$line")): $(metric ideal-frac "$line") of ideal (target >= 0.90)"
	echo "  whole run:                $(metric whole-s "$line") s: $(metric whole-ideal-frac "$line") of ideal (target >= 0.95)"
	echo "  first call left after:    $(metric first-call-s "$line") s"
	echo "  observed call latency:    $(metric call-latency-ms "$line") ms (server replies 50 ms after each request arrives)"
	echo "  share at observed latency: $(metric ideal-frac-at-observed-latency "$line")"
	wholes+=("$(metric whole-ideal-frac "$line")")
done < <(run BenchmarkEvalScheduling)
if [ "${#wholes[@]}" -gt 1 ]; then
	echo "  whole run, median of ${#wholes[@]}: $(printf '%s\n' "${wholes[@]}" | median) of ideal (target >= 0.95)"
fi
echo "  load average now:         $(cut -d' ' -f1-3 /proc/loadavg)"
echo
while read -r line; do
	echo "scheduling, distinct images (the same 630 records, every one of the 2,100 image files distinct):"
	echo "  first run (all decoded):  whole run $(metric whole-s "$line") s: $(metric whole-ideal-frac "$line") of ideal; call phase $(metric ideal-frac "$line") of ideal; first call after $(metric first-call-s "$line") s"
	echo "  second run (memo):        whole run $(metric whole-s@second "$line") s: $(metric whole-ideal-frac@second "$line") of ideal"
done < <(run BenchmarkEvalSchedulingDistinct)
echo
while read -r line; do
	echo "bytes ($(metric images "$line") distinct images of $(metric MB/image "$line") MB, zero latency):"
	echo "  concurrency 32:           $(metric MB/s@c32 "$line") MB/s of requests, $(metric calls/s@c32 "$line") calls/s"
	echo "  concurrency 64:           $(metric MB/s@c64 "$line") MB/s of requests, $(metric calls/s@c64 "$line") calls/s"
	echo "  peak heap in use:         $(metric peak-heap-MiB@c32 "$line") MiB at 32, $(metric peak-heap-MiB@c64 "$line") MiB at 64"
	echo "  peak RSS (whole process): $(metric maxrss-MiB "$line") MiB (target < 700)"
done < <(run BenchmarkEvalBytes "$bin_dir/bytes.time")
echo "  peak RSS, /usr/bin/time -v: $(time_rss "$bin_dir/bytes.time") MiB (the benchmark process over all its runs, concurrency 32 then 64; target < 700)"
echo "  load average now:         $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$full" = 1 ] || exit 0
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
while read -r line; do
	echo "full start-up (2,100 records, $(metric calls "$line") calls, in process, baseline oracle, concurrency 16):"
	for pass in first second; do
		echo "  $pass run:               first call after $(metric first-call-s@$pass "$line") s (target < 1), whole run $(metric whole-s@$pass "$line") s, call phase $(metric call-phase-s@$pass "$line") s; $(metric decodes@$pass "$line") decodes, $(metric remembered@$pass "$line") remembered"
	done
	echo "  second run target:        whole run <= 20 s"
	echo "  peak RSS (whole process): $(metric maxrss-MiB "$line") MiB"
done < <(CHX_BENCH_FULL_DIR="$full_dir" run BenchmarkEvalStartup)
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
