#!/usr/bin/env bash
# faults.sh — system-call fault injection as a standing test.
#
# Runs build (fresh and over a finished build), eval, merge, report,
# review export and read export (of a study a reader has answered through
# `read serve`) on a small phantom benchmark under strace, making one
# system call fail: ENOSPC and EIO on write, fsync and renameat (the
# rename Go makes), EMFILE on openat, EIO on pread64. Every row names the
# file it faults:
#   - a fixed path: strace -P PATH traces, counts and faults only the
#     calls on that file (a path argument, or a descriptor open on it),
#     so inject=SYSCALL:error=E:when=N fails the Nth call on that file;
#   - re:REGEX, for a file with a random name (a temporary file): the Nth
#     call of each thread is faulted (strace counts per thread and cannot
#     select a descriptor), and the attempt counts only if a faulted call
#     landed on a file matching REGEX and none on the Go runtime's own
#     event descriptor; otherwise N+1 is tried, up to 4 times.
# A file written by one call in a thread that wrote before (the single
# write of a temporary file in eval, read export and review export) cannot
# be told apart by either way; those files are faulted at their fsync or
# rename instead. A row fails when no faulted call landed on its file.
# For every run it
# also checks that
#   - the command either completes or exits non-zero with an error line
#     naming a file under the work folder, and never panics (no "panic:",
#     no goroutine dump);
#   - the earlier good output is intact (a finished build's SHA256SUMS
#     still verifies);
#   - a plain rerun of the same command (no --force) completes, and its
#     output equals an unfaulted run's: SHA256SUMS for build, results
#     without timing fields (all_results.json) for eval, merge and read
#     export, report.md and the CSVs for report, reviews.jsonl for review
#     export.
# It prints one table row per run (the table of docs/troubleshooting.md)
# and exits 1 when any row fails. About 2 minutes on 2 cores.
#
# Environment: FAULTS_DIR (a fresh temporary folder), KEEP=1 to keep it.
set -uo pipefail

cd "$(dirname "$0")/.."
for tool in strace curl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "faults: $tool is missing (apt-get install $tool)" >&2
		exit 2
	fi
done
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
"$C" read init --benchmark "$B" --db "$T/read.sqlite" --readers 1 >"$T/read.tokens" 2>/dev/null || exit 2

# answer_study DB TOKEN: the reader of TOKEN answers every turn of the
# study in DB (option 1) through `read serve`, as a browser would.
answer_study() {
	local db=$1 token=$2 jar="$T/read.cookies" base pid page csrf pos seq code turns=0
	mkfifo "$T/read.url"
	"$C" read serve --db "$db" --listen 127.0.0.1:0 --quiet >"$T/read.url" 2>"$T/read.serve.err" &
	pid=$!
	exec 3<"$T/read.url"
	read -r base <&3
	base=${base%/}
	code=$(curl -s -c "$jar" -o /dev/null -w '%{http_code}' --data-urlencode "token=$token" "$base/login")
	[ "$code" = 303 ] || { say "faults: read serve sign-in: HTTP $code"; kill "$pid"; return 1; }
	while page=$(curl -s -b "$jar" -c "$jar" "$base/read") && ! grep -q 'data-done' <<<"$page"; do
		csrf=$(grep -o 'name="csrf" value="[^"]*"' <<<"$page" | head -n 1 | sed 's/.*value="//; s/"$//')
		pos=$(grep -o 'name="pos" value="[^"]*"' <<<"$page" | head -n 1 | sed 's/.*value="//; s/"$//')
		seq=$(grep -o 'name="seq" value="[^"]*"' <<<"$page" | head -n 1 | sed 's/.*value="//; s/"$//')
		code=$(curl -s -b "$jar" -c "$jar" -o /dev/null -w '%{http_code}' --data-urlencode "csrf=$csrf" \
			--data "pos=$pos&seq=$seq&option=1" "$base/answer")
		turns=$((turns + 1))
		if [ "$code" != 303 ] || [ "$turns" -gt 500 ]; then
			say "faults: read serve answer $pos/$seq: HTTP $code"
			kill "$pid"
			return 1
		fi
	done
	kill "$pid"
	wait "$pid"
	exec 3<&-
	say "faults: the reader answered $turns turns"
}
answer_study "$T/read.sqlite" "$(awk '$1 == "reader" { print $3 }' "$T/read.tokens")" || exit 2
"$C" read export --db "$T/read.sqlite" --out "$T/ref/read" >/dev/null 2>&1 || exit 2
READRUN=$(cd "$T/ref/read" && ls -d */oracle_*)
[ -f "$T/ref/read/$READRUN/all_results.json" ] || { say "faults: read export wrote no run"; exit 2; }

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
	read) cmp -s <(strip "$out/$READRUN/all_results.json") <(strip "$T/ref/read/$READRUN/all_results.json") &&
		[ ! -e "$out/$READRUN/.unfinished" ] ;;
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

# fault NAME KIND SYSCALL ERRNO WHEN TARGET OUT -- ARGS...: one faulted
# run (TARGET: the file's path, or re:REGEX; see the header), its checks
# and its rerun.
fault() {
	local name=$1 kind=$2 sys=$3 errno=$4 when=$5 target=$6 out=$7
	shift 8
	local log="$T/log.$n" code rerun verdict="ok" try=1 hit runtime faulted
	while :; do
		rm -f "$log".strace.*
		if [ "${target#re:}" = "$target" ]; then
			strace -ff -qq -y -e signal=none -o "$log.strace" -P "$target" -e trace="$sys" -e inject="$sys:error=$errno:when=$when" \
				"$C" "$@" >"$log.out" 2>"$log.err"
			code=$?
			faulted=$(cat "$log".strace.* | grep 'INJECTED')
			hit=$(grep -c -F -e "<$target>" -e "\"$target\"" <<<"$faulted")
			break
		fi
		strace -ff -qq -y -e signal=none -o "$log.strace" -e trace="$sys" -e inject="$sys:error=$errno:when=$when" \
			"$C" "$@" >"$log.out" 2>"$log.err"
		code=$?
		faulted=$(cat "$log".strace.* | grep 'INJECTED')
		hit=$(grep -c -E "<${target#re:}[^>]*>" <<<"$faulted")
		runtime=$(grep -c 'anon_inode' <<<"$faulted")
		if { [ "$hit" -gt 0 ] && [ "$runtime" -eq 0 ]; } || [ "$try" -eq 4 ]; then
			break
		fi
		# A miss: nothing of the target faulted, or the runtime's event
		# descriptor too (it aborts). Clear the output and try call N+1.
		rm -rf "$out"
		[ "$kind" = rebuild ] && rebuild_copy
		try=$((try + 1))
		when=$((when + 1))
	done
	local last
	last=$(grep -v '^$' "$log.err" | grep -v '^build: \|^WARNING\|^warning' | tail -n 1)
	if [ "$hit" -eq 0 ]; then
		verdict="no faulted call on the target file"
	elif grep -q 'netpollBreak write failed' "$log.err"; then
		verdict="the runtime's event descriptor was faulted"
	elif grep -q -E '^panic:|^goroutine [0-9]+ \[' "$log.err"; then
		verdict="PANIC"
	elif [ "$code" -ne 0 ] && [ "$code" -ne 130 ] && ! grep -q "$T/" <<<"$last"; then
		verdict="no file named: $last"
	elif ! intact "$kind" "$out"; then
		verdict="earlier output damaged"
	fi
	if [ "$verdict" != ok ] && [ "$hit" -gt 0 ] && grep -q '^write(2<' <<<"$faulted"; then
		# The error line itself was also faulted (calls are counted per
		# thread): its loss is the injection's, not the command's.
		verdict="ok"
		last="(the error line's own write was faulted)"
	fi
	if [ "$code" -eq 0 ]; then
		# It completed (the fault was absorbed): its output must already
		# equal the unfaulted run's; a rerun over a finished output would
		# rightly need --force.
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
	local msg=${last#chexpercept: } file=${target#re:}
	[ "$code" -eq 0 ] && msg="(absorbed: completed)"
	msg=${msg//$T\//}
	msg=${msg//|/\\|}
	file=${file//$T\//}
	file=${file//\\/}
	file=${file//|/\\|}
	local how="call $when of the file"
	[ "${target#re:}" != "$target" ] && how="call $when per thread, try $try"
	rows+=("| $name | \`$sys\` $errno, $how | \`$file\` | $hit | $code | ${msg:0:100} | $rerun | $verdict |")
	say "faults: $name $sys $errno @$when on $file (try $try) → $hit on target, exit $code, rerun $rerun: $verdict"
}

# A copy of the finished build for the rebuild runs, made afresh for each.
rebuild_copy() { rm -rf "$T/rb" && cp -a "$B" "$T/rb"; }

n=0
o=""
next() { n=$((n + 1)); o="$T/out$n"; }
RUN=baseline_random/oracle_none

# build: SPEC is "SYSCALL ERRNO WHEN TARGET", TARGET relative to the output
# folder (re: patterns too) or absolute.
for spec in "write ENOSPC 5 re:OUT/work/\.staging-" "fsync EIO 1 OUT/work" "renameat EIO 1 OUT/SHA256SUMS" \
	"openat EMFILE 1 $T/ph/images/ph0005.png"; do
	set -- $spec
	next
	fault "build" build "$1" "$2" "$3" "${4//OUT/$o}" "$o" -- "${build_args[@]}" --out "$o"
done
for spec in "write EIO 3 re:OUT/.*\.tmp-" "renameat ENOSPC 1 OUT/work/.chexpercept-build" \
	"openat EMFILE 1 OUT/masks/edema_ph0005_positive_0" "fsync ENOSPC 2 OUT/work"; do
	set -- $spec
	rebuild_copy
	next
	fault "build (rebuild)" rebuild "$1" "$2" "$3" "${4//OUT/$T/rb}" "$T/rb" -- "${build_args[@]}" --out "$T/rb"
done
for spec in "write ENOSPC 1 OUT/$RUN/results.jsonl" "fsync EIO 1 OUT/$RUN/results.jsonl" "renameat EIO 1 OUT/$RUN/manifest.json" \
	"openat EMFILE 1 $B/chexpercept/edema_ph0005_positive_0/detection_qa/xray.png"; do
	set -- $spec
	next
	fault "eval" eval "$1" "$2" "$3" "${4//OUT/$o}" "$o" -- "${eval_args[@]}" --out "$o"
done
for spec in "write ENOSPC 10 re:OUT/.*\.tmp-" "renameat EIO 1 OUT/report.md" "openat EMFILE 1 $REFRUN/manifest.json"; do
	set -- $spec
	next
	fault "report" report "$1" "$2" "$3" "${4//OUT/$o}" "$o" -- "${report_args[@]}" --out "$o"
done
for spec in "write EIO 1 OUT/$RUN/.unfinished" "fsync ENOSPC 1 OUT/$RUN" "renameat EIO 1 OUT/$RUN/results.jsonl" \
	"openat EMFILE 1 $SHARDS/shard-2-of-2/results.jsonl"; do
	set -- $spec
	next
	fault "merge" merge "$1" "$2" "$3" "${4//OUT/$o}" "$o" -- merge "$SHARDS" --out "$o"
done
for spec in "open EMFILE 1 $T/read.sqlite" "pread64 EIO 2 $T/read.sqlite" "pread64 EIO 8 $T/read.sqlite" \
	"write ENOSPC 1 OUT/$READRUN/.unfinished" "fsync EIO 1 OUT/$READRUN/.unfinished" "renameat EIO 1 OUT/$READRUN/results.jsonl"; do
	set -- $spec
	next
	fault "read export" read "$1" "$2" "$3" "${4//OUT/$o}" "$o" -- read export --db "$T/read.sqlite" --out "$o"
done
for spec in "renameat EIO 1 OUT" "fsync EIO 1 re:OUT\.tmp-" "pread64 EIO 3 $T/review.sqlite"; do
	set -- $spec
	next
	fault "review export" review "$1" "$2" "$3" "${4//OUT/$o}" "$o" -- review export --review-db "$T/review.sqlite" --reviews "$o"
done

echo "| Command | Fault | Target file | Faulted calls on it | Exit | Message | Rerun exit | Verdict |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $fail
