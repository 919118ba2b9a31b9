#!/usr/bin/env bash
# bench.sh — every performance figure in one run, for
# docs/performance.md:
#
#   1. evaluator call rate against serve-baseline (50 ms latency, small
#      images) at concurrency 1, 8, 32 and 64, with the ideal rate beside
#      each (Go benchmark BenchmarkEvalRate in internal/demo; the server is
#      a separate `chexpercept serve-baseline` process);
#   2. evaluator figures (scripts/bench-eval.sh): scheduling at
#      concurrency 32 and request throughput (MB/s, calls/s) with
#      full-size phantom-like images at zero latency, peak memory;
#   3. builder: the 2,100-case phantom benchmark beside its PNG-encoding
#      floor, peak memory (scripts/bench-build.sh);
#   4. report of 14 runs × 2,100 items, peak memory (BenchmarkReport14x2100);
#   5. validation of a 2,100-record benchmark, peak memory
#      (BenchmarkValidate2100).
#
# A piece that is missing (script or Go benchmark not in the tree) prints a
# "not available" line; a piece that fails prints "FAILED" with its log and
# the run goes on. The exit status is 1 when a piece failed.
#
# Usage: scripts/bench.sh [--quick] [--skip-build] [--work DIR]
#   --quick       a fast check that every piece works: 42 records for the
#                 concurrency sweep, a 21-case build from 4 phantom cases per
#                 lesion and label; figures are not the published ones
#   --skip-build  leave out the full-size build (it takes many minutes)
#   --work DIR    scratch directory (default: a new /tmp/chexpercept-bench.*)
# Environment: CASES_PER_LESION and PER_LESION override the build's size
# (default 250 and 100,100,100; --quick 4 and 1,1,1).
set -uo pipefail

quick=0 skip_build=0 work=""
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--skip-build) skip_build=1 ;;
	--work) work="${2:?--work needs a directory}"; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done

cd "$(dirname "$0")/.."
root=$(pwd)
[ -n "$work" ] || work=$(mktemp -d /tmp/chexpercept-bench.XXXXXX)
mkdir -p "$work" || exit 2
failed=0
have_time=0
[ -x /usr/bin/time ] && have_time=1

section() { printf '\n== %s\n' "$*"; }
na() { printf '  not available: %s\n' "$*"; }
fail() { printf '  FAILED: %s\n' "$*"; failed=1; }

# metric UNIT LINE: the value printed before UNIT on a `go test -bench` line.
metric() { awk -v u="$1" '{ for (i = 2; i <= NF; i++) if ($i == u) { print $(i-1); exit } }' <<<"$2"; }

# rss_mib FILE: peak RSS in MiB recorded by /usr/bin/time -f %M.
rss_mib() { if [ -s "$1" ]; then awk 'END { printf "%.0f", $1 / 1024 }' "$1"; else echo "n/a"; fi; }

# timed OUT RSSFILE CMD...: run CMD with stdout+stderr to OUT, its peak RSS to RSSFILE.
timed() {
	local out=$1 rss=$2
	shift 2
	if [ "$have_time" = 1 ]; then
		/usr/bin/time -f '%M' -o "$rss" "$@" >"$out" 2>&1
	else
		: >"$rss"
		"$@" >"$out" 2>&1
	fi
}

# testbin PKG: compile the test binary of internal/PKG once; prints its path.
testbin() {
	local bin="$work/$1.test"
	[ -x "$bin" ] || go test -c -o "$bin" "./internal/$1" >"$work/$1.compile.log" 2>&1 || return 1
	echo "$bin"
}

# benchbin PKG NAME: prints the test binary of internal/PKG if it has the
# Go benchmark NAME. Status 1: not in this tree; 2: does not compile.
benchbin() {
	[ -d "internal/$1" ] || return 1
	local bin
	bin=$(testbin "$1") || return 2
	"$bin" -test.list "^$2\$" 2>/dev/null | grep -qx "$2" || return 1
	echo "$bin"
}

section "machine"
echo "  CPU:          $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "  cores:        $(nproc)"
echo "  memory:       $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
echo "  OS:           $(uname -sr)"
echo "  Go:           $(go env GOVERSION)"
echo "  commit:       $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg) at start ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo "  mode:         $([ $quick = 1 ] && echo 'QUICK (reduced sizes: figures are a smoke test, not the published ones)' || echo full)"
echo "  scratch:      $work"
[ "$have_time" = 1 ] || echo "  note: /usr/bin/time is missing (apt-get install time): peak memory of the Go benchmarks is n/a"

echo
echo "building chexpercept…"
if ! go build -o "$work/chexpercept" ./cmd/chexpercept 2>"$work/build-binary.log"; then
	cat "$work/build-binary.log"
	exit 2
fi

# 1. Concurrency sweep.
section "evaluator call rate, serve-baseline with 50 ms latency, small images"
bin=$(benchbin demo BenchmarkEvalRate)
st=$?
if [ $st = 1 ]; then
	na "BenchmarkEvalRate (internal/demo) is not in this tree"
elif [ $st = 2 ]; then
	fail "compiling internal/demo tests (see $work/demo.compile.log)"
else
	per_cell=15
	[ $quick = 1 ] && per_cell=2
	"$work/chexpercept" serve-baseline --listen 127.0.0.1:0 --latency 50ms >"$work/serve.out" 2>"$work/serve.err" &
	srv=$!
	url=""
	for _ in $(seq 50); do
		url=$(head -n1 "$work/serve.out" 2>/dev/null)
		[ -n "$url" ] && break
		sleep 0.1
	done
	if [ -z "$url" ]; then
		fail "serve-baseline did not start: $(cat "$work/serve.err")"
	else
		echo "  serve-baseline (separate process) at $url; $((21 * per_cell)) records"
		CHX_BENCH_ENDPOINT="$url" CHX_BENCH_PER_CELL=$per_cell \
			timed "$work/rate.out" "$work/rate.rss" "$bin" -test.run '^$' -test.bench '^BenchmarkEvalRate$' -test.benchtime 1x -test.timeout 60m
		if grep -q '^BenchmarkEvalRate/' "$work/rate.out"; then
			printf '  %-12s %10s %14s %15s\n' concurrency "calls/s" "ideal calls/s" "share of ideal"
			while read -r line; do
				c=$(sed -E 's|^BenchmarkEvalRate/c([0-9]+).*|\1|' <<<"$line")
				printf '  %-12s %10s %14s %15s\n' "$c" "$(metric calls/s "$line")" "$(metric ideal-calls/s "$line")" "$(metric ideal-frac "$line")"
			done < <(grep '^BenchmarkEvalRate/' "$work/rate.out")
			echo "  calls per run: $(metric calls "$(grep -m1 '^BenchmarkEvalRate/' "$work/rate.out")")"
			echo "  peak RSS of the evaluator process: $(rss_mib "$work/rate.rss") MiB (server not included)"
		else
			fail "BenchmarkEvalRate (log: $work/rate.out)"
			tail -n 5 "$work/rate.out" | sed 's/^/    /'
		fi
	fi
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
fi

# 2. Evaluator figures.
section "evaluator: scheduling at concurrency 32 and request throughput with full-size images (scripts/bench-eval.sh)"
if [ ! -f scripts/bench-eval.sh ]; then
	na "scripts/bench-eval.sh is not in this tree"
elif bash scripts/bench-eval.sh >"$work/bench-eval.out" 2>&1; then
	sed 's/^/  /' "$work/bench-eval.out"
else
	fail "scripts/bench-eval.sh (log: $work/bench-eval.out)"
	tail -n 5 "$work/bench-eval.out" | sed 's/^/    /'
fi

# 3. Builder.
section "builder: phantom benchmark beside its PNG-encoding floor (scripts/bench-build.sh)"
if [ ! -f scripts/bench-build.sh ]; then
	na "scripts/bench-build.sh is not in this tree"
elif [ $skip_build = 1 ]; then
	echo "  skipped (--skip-build)"
else
	if [ $quick = 1 ]; then
		cases=4 per_lesion=1,1,1
	else
		cases=250 per_lesion=100,100,100
	fi
	# A scaled run (e.g. CASES_PER_LESION=25 PER_LESION=10,10,10) gives the
	# build/floor ratio in a tenth of the time.
	cases=${CASES_PER_LESION:-$cases}
	per_lesion=${PER_LESION:-$per_lesion}
	echo "  phantom --cases-per-lesion $cases, build --per-lesion $per_lesion (targets per lesion: LF,RF,RR)"
	if BENCH_DIR="$work/build" CASES_PER_LESION=$cases PER_LESION=$per_lesion \
		bash scripts/bench-build.sh >"$work/bench-build.out" 2>&1; then
		# the script's own summary: the figures after the build log
		sed -n '/^workers /,$p' "$work/bench-build.out" | sed 's/^/  /'
	else
		fail "scripts/bench-build.sh (log: $work/bench-build.out)"
		tail -n 5 "$work/bench-build.out" | sed 's/^/    /'
	fi
fi

# 4. Report.
section "report: 14 runs × 2,100 items, plots and HTML (BenchmarkReport14x2100)"
bin=$(benchbin report BenchmarkReport14x2100)
st=$?
if [ $st = 1 ]; then
	na "BenchmarkReport14x2100 (internal/report) is not in this tree"
elif [ $st = 2 ]; then
	fail "compiling internal/report tests (see $work/report.compile.log)"
else
	# The first process writes the synthetic runs (CHX_BENCH_FIXTURE keeps
	# them); a second one measures reporting alone, peak memory included.
	fix="$work/report-fixture"
	runs=2
	[ $quick = 1 ] && runs=1
	for i in $(seq $runs); do
		CHX_BENCH_FIXTURE="$fix" timed "$work/report.out" "$work/report.rss" \
			"$bin" -test.run '^$' -test.bench '^BenchmarkReport14x2100$' -test.benchtime 1x -test.timeout 60m
	done
	line=$(grep -m1 '^BenchmarkReport14x2100' "$work/report.out")
	if [ -n "$line" ]; then
		echo "  time per report:  $(awk '{ printf "%.2f", $3 / 1e9 }' <<<"$line") s wall, $(metric cpu-s/op "$line") s CPU (target < 5 s on 2 cores)"
		echo "  peak RSS:         $(rss_mib "$work/report.rss") MiB$([ $runs = 1 ] && echo ' (includes writing the synthetic runs)')"
	else
		fail "BenchmarkReport14x2100 (log: $work/report.out)"
		tail -n 5 "$work/report.out" | sed 's/^/    /'
	fi
fi

# 5. Validation.
section "validate: 2,100 records, 7,000 PNG headers (BenchmarkValidate2100)"
bin=$(benchbin validate BenchmarkValidate2100)
st=$?
if [ $st = 1 ]; then
	na "BenchmarkValidate2100 (internal/validate) is not in this tree"
elif [ $st = 2 ]; then
	fail "compiling internal/validate tests (see $work/validate.compile.log)"
else
	timed "$work/validate.out" "$work/validate.rss" \
		"$bin" -test.run '^$' -test.bench '^BenchmarkValidate2100$' -test.benchtime 1x -test.timeout 60m
	line=$(grep -m1 '^BenchmarkValidate2100' "$work/validate.out")
	if [ -n "$line" ]; then
		echo "  time per validation: $(awk '{ printf "%.2f", $3 / 1e9 }' <<<"$line") s"
		echo "  peak RSS:            $(rss_mib "$work/validate.rss") MiB (includes writing the 7,000 test PNGs)"
	else
		fail "BenchmarkValidate2100 (log: $work/validate.out)"
		tail -n 5 "$work/validate.out" | sed 's/^/    /'
	fi
fi

echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); logs in $work"
exit $failed
