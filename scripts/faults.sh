#!/usr/bin/env bash
# faults.sh — system-call fault injection as a standing test.
#
# Runs build (fresh and over a finished build), eval, merge, report,
# review export and read export on a small phantom benchmark under
# strace, making one system call fail (strace -e inject=SYSCALL:error=E:when=N:
# the Nth call of each thread): ENOSPC and EIO on write, fsync and renameat (the rename Go makes),
# EMFILE on openat, EIO on pread64. For every run it checks that
#   - the command either completes or exits non-zero with an error line
#     naming a file under the work folder, and never panics (no "panic:",
#     no goroutine dump);
#   - the earlier good output is intact (a finished build's SHA256SUMS
#     still verifies);
#   - a plain rerun of the same command (no --force) completes, and its
#     output equals an unfaulted run's: SHA256SUMS for build, results
#     without timing fields (all_results.json, summary counts) for eval
#     and merge, report.md and the CSVs for report, reviews.jsonl for
#     review export.
# It prints one table row per run (the table of docs/troubleshooting.md)
# and exits 1 when any row fails. About 3 minutes on 2 cores.
#
# Environment: FAULTS_DIR (a fresh temporary folder), KEEP=1 to keep it.
set -uo pipefail

cd "$(dirname "$0")/.."
if ! command -v strace >/dev/null 2>&1; then
	echo "faults: strace is missing (apt-get install strace)" >&2
	exit 2
fi
T=${FAULTS_DIR:-$(mktemp -d /tmp/chexpercept-faults.XXXXXX)}
T=$(cd "$T" && pwd)
if [ "${KEEP:-0}" != 1 ]; then
	trap 'rm -rf "$T"' EXIT
fi
go build -o "$T/chx" ./cmd/chexpercept || exit 2
C="$T/chx"
export XDG_CACHE_HOME="$T/cache"

fail=0
rows=()
say() { printf '%s\n' "$*" >&2; }

# ---------------------------------------------------------------- reference
say "faults: reference outputs in $T"
printf 'lesions: [edema, cardiomegaly]\n' >"$T/cfg.yaml"
"$C" phantom --out "$T/ph" --cases-per-lesion 1 --phantom-seed 1 --workers 2 >/dev/null || exit 2
build_args=(build --source "$T/ph/manifest.jsonl" --accept-all --per-lesion 1,1,1 --workers 2 --config "$T/cfg.yaml")
"$C" "${build_args[@]}" --out "$T/ref/bench" >/dev/null 2>&1 || exit 2
B="$T/ref/bench"
eval_args=(eval --benchmark "$B" --provider baseline --model random --oracle none --concurrency 2)
"$C" "${eval_args[@]}" --out "$T/ref/results" >/dev/null 2>&1 || exit 2
REFRUN="$T/ref/results/baseline_random/oracle_none"
for i in 1 2; do
	"$C" "${eval_args[@]}" --shard "$i/2" --out "$T/shards" >/dev/null 2>&1 || exit 2
done
SHARDS="$T/shards/baseline_random/oracle_none"
"$C" merge "$SHARDS" --out "$T/ref/merged" >/dev/null 2>&1 || exit 2
report_args=(report "$T/ref/results" --bootstrap 20)
"$C" "${report_args[@]}" --out "$T/ref/report" >/dev/null 2>&1 || exit 2
"$C" review init --source "$T/ph/manifest.jsonl" --review-db "$T/review.sqlite" --reviewers 1 --config "$T/cfg.yaml" >/dev/null 2>&1 || exit 2
"$C" review export --review-db "$T/review.sqlite" --reviews "$T/ref/reviews.jsonl" >/dev/null 2>&1 || exit 2
"$C" read init --benchmark "$B" --db "$T/read.sqlite" --readers 1 >/dev/null 2>&1 || exit 2

# ------------------------------------------------------------ comparisons
# same KIND OUT: the output of a rerun against the reference, without
# timing fields.
strip() { grep -v -E '"(started_at|finished_at|wall_time_s|latency_ms|total_ms|created_at|time)"' "$1"; }
same() {
	local kind=$1 out=$2
	case $kind in
	build) cmp -s "$out/SHA256SUMS" "$B/SHA256SUMS" && (cd "$out" && sha256sum --quiet -c SHA256SUMS) ;;
	eval) cmp -s <(strip "$out/baseline_random/oracle_none/all_results.json") <(strip "$REFRUN/all_results.json") ;;
	merge) cmp -s <(strip "$out/baseline_random/oracle_none/all_results.json") <(strip "$T/ref/merged/baseline_random/oracle_none/all_results.json") &&
		[ ! -e "$out/baseline_random/oracle_none/.unfinished" ] ;;
	report) for f in report.md ext_stage_accuracy.csv ext_depth.csv; do cmp -s "$out/$f" "$T/ref/report/$f" || return 1; done ;;
	review) cmp -s <(strip "$out") <(strip "$T/ref/reviews.jsonl") ;;
	read) true ;;
	esac
}

# intact KIND OUT: what an earlier good run wrote is still good.
intact() {
	local kind=$1 out=$2
	case $kind in
	rebuild) (cd "$out" && sha256sum --quiet -c SHA256SUMS) >/dev/null 2>&1 ;;
	*) true ;;
	esac
}

# fault NAME KIND SYSCALL ERRNO WHEN OUT -- ARGS...: one faulted run, its
# checks and its rerun.
fault() {
	local name=$1 kind=$2 sys=$3 errno=$4 when=$5 out=$6
	shift 7
	local log="$T/log.$n" code rerun verdict="ok"
	strace -f -qq -y -o "$log.strace" -e trace="$sys" -e inject="$sys:error=$errno:when=$when" "$C" "$@" >"$log.out" 2>"$log.err"
	code=$?
	local last hit
	last=$(grep -v '^$' "$log.err" | grep -v '^build: \|^WARNING\|^warning' | tail -n 1)
	# Where the faults landed: strace -y names each descriptor's file.
	hit=$(grep 'INJECTED' "$log.strace" | grep -c "<$T/")
	if grep -q 'netpollBreak write failed' "$log.err"; then
		# A write fault in the Go runtime's own event descriptor (strace
		# counts calls per thread and cannot filter by descriptor): the
		# runtime aborts. No file of ours was involved.
		verdict="ok"
		last="(runtime event descriptor hit: runtime abort)"
	elif grep -q -E '^panic:|^goroutine [0-9]+ \[' "$log.err"; then
		verdict="PANIC"
	elif [ "$code" -ne 0 ] && [ "$code" -ne 130 ] && [ "$hit" -gt 0 ] && ! grep -q "$T/" <<<"$last"; then
		verdict="no file named: $last"
	elif ! intact "$kind" "$out"; then
		verdict="earlier output damaged"
	fi
	if [ "$verdict" != ok ] && grep 'INJECTED' "$log.strace" | grep -q '^[0-9]*  *write(2<'; then
		# The error line itself was the faulted write (calls are counted
		# per thread): its loss is the injection's, not the command's.
		verdict="ok"
		last="(the error line's own write was faulted)"
	fi
	[ "$hit" -eq 0 ] && [ "$code" -ne 0 ] && [ -z "$last" ] && last="(the fault hit stderr or a pipe, not a file)"
	if [ "$code" -eq 0 ]; then
		# It completed (the fault was absorbed, or landed on nothing of
		# ours): its output must already equal the unfaulted run's; a
		# rerun over a finished output would rightly need --force.
		: >"$log.rerun.err"
		rerun=0
	else
		"$C" "$@" >"$log.rerun.out" 2>"$log.rerun.err"
		rerun=$?
	fi
	local k=$kind
	[ "$k" = rebuild ] && k=build
	if [ "$verdict" = ok ] && { [ "$rerun" -ne 0 ] || ! same "$k" "$out"; }; then
		verdict="rerun: exit $rerun$(tail -n 1 "$log.rerun.err" | sed 's/^/, /')"
	fi
	[ "$verdict" = ok ] || fail=1
	local msg=${last#chexpercept: }
	[ "$code" -eq 0 ] && msg="(absorbed: completed)"
	msg=${msg//$T\//}
	msg=${msg//|/\\|}
	rows+=("| $name | \`$sys\` $errno, call $when | $hit | $code | ${msg:0:110} | $rerun | $verdict |")
	say "faults: $name $sys $errno @$when → exit $code, rerun $rerun: $verdict"
}

# A copy of the finished build for the rebuild runs, made afresh for each.
rebuild_copy() { rm -rf "$T/rb" && cp -a "$B" "$T/rb"; }

n=0
o=""
next() { n=$((n + 1)); o="$T/out$n"; }

for spec in "write ENOSPC 5" "fsync EIO 1" "renameat EIO 3" "openat EMFILE 40"; do
	set -- $spec
	next
	fault "build" build "$1" "$2" "$3" "$o" -- "${build_args[@]}" --out "$o"
done
for spec in "write EIO 3" "renameat ENOSPC 1" "openat EMFILE 30" "fsync ENOSPC 2"; do
	set -- $spec
	rebuild_copy
	next
	fault "build (rebuild)" rebuild "$1" "$2" "$3" "$T/rb" -- "${build_args[@]}" --out "$T/rb"
done
for spec in "write ENOSPC 3" "fsync EIO 2" "renameat EIO 1" "openat EMFILE 20"; do
	set -- $spec
	next
	fault "eval" eval "$1" "$2" "$3" "$o" -- "${eval_args[@]}" --out "$o"
done
for spec in "write ENOSPC 10" "renameat EIO 5" "openat EMFILE 30"; do
	set -- $spec
	next
	fault "report" report "$1" "$2" "$3" "$o" -- "${report_args[@]}" --out "$o"
done
for spec in "write EIO 2" "fsync ENOSPC 1" "renameat EIO 2" "openat EMFILE 12"; do
	set -- $spec
	next
	fault "merge" merge "$1" "$2" "$3" "$o" -- merge "$SHARDS" --out "$o"
done
# pread64 from the 4th call of a thread on: the dynamic loader makes the
# first two of the main thread.
for spec in "openat EMFILE 6" "pread64 EIO 4" "pread64 EIO 8" "write ENOSPC 2"; do
	set -- $spec
	next
	fault "read export" read "$1" "$2" "$3" "$o" -- read export --db "$T/read.sqlite" --out "$o"
done
for spec in "write ENOSPC 1" "renameat EIO 1" "fsync EIO 1"; do
	set -- $spec
	next
	fault "review export" review "$1" "$2" "$3" "$o" -- review export --review-db "$T/review.sqlite" --reviews "$o"
done

echo "| Command | Fault (per thread) | Faults on our files | Exit | Message | Rerun exit | Verdict |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $fail
