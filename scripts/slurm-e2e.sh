#!/usr/bin/env bash
# slurm-e2e.sh — deploy/slurm/eval-array.sh on a real one-node Slurm cluster.
#
# As root on Debian 12 (Slurm 22.05 from Debian): installs slurm-wlm, munge
# and jq with apt when missing, then, all inside one temporary directory,
# starts munged (own key and socket), slurmctld and slurmd (a generated
# slurm.conf: this host as the only node, 2 CPUs, proctrack/linuxproc,
# task/none, no cgroups, no accounting; every daemon on loopback), builds
# chexpercept and a 21-case phantom benchmark, and serves the random baseline
# policy on a loopback port. Then:
#
#   reference  one unsharded eval with the array script's settings;
#   pass 1     eval-array.sh as a 4-task array plus the header's afterany
#              merge job; the merged run must equal the reference
#              (spec protocol.md §9.5: all_results.json byte-identical,
#              results.jsonl equal sorted with timing fields dropped);
#   pass 2     the same into fresh folders, but task 0 is killed with
#              SIGKILL mid-run: the afterany merge still runs and reports
#              the missing records; the array is submitted again as the
#              script's header says, the finished shards exit at once, the
#              killed one resumes, and the new merge equals the reference.
#
# Every daemon and server it started is stopped on exit, failure included,
# and only its own temporary directory is removed (SLURM_E2E_KEEP=1 keeps
# it). Exit status 0 only when every check passed. Needs go on PATH.
#
# Usage: scripts/slurm-e2e.sh
set -euo pipefail
cd "$(dirname "$0")/.."

: "${SLURM_E2E_WAIT:=90}"        # seconds allowed for each wait
: "${SLURM_E2E_LATENCY:=500ms}"  # serve-baseline delay per reply
: "${SLURM_E2E_BUDGET:=180}"     # seconds allowed after the install
script_start=$SECONDS

say() { printf 'slurm-e2e [%3ds]: %s\n' "$((SECONDS - script_start))" "$*"; }
die() { printf 'slurm-e2e: FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (it installs packages and runs slurmd)"
command -v go >/dev/null || die "go is not on PATH"

# ---- packages ---------------------------------------------------------
install_packages() {
	local pkgs=() c
	for c in slurmctld slurmd sbatch; do
		command -v "$c" >/dev/null || { pkgs+=(slurm-wlm); break; }
	done
	command -v munged >/dev/null || pkgs+=(munge)
	command -v jq >/dev/null || pkgs+=(jq)
	[ ${#pkgs[@]} -eq 0 ] && return
	say "installing ${pkgs[*]} (apt)"
	local t=$SECONDS
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
	say "apt install took $((SECONDS - t)) s"
}
install_packages
for c in slurmctld slurmd sbatch squeue sinfo scontrol scancel munged munge unmunge jq; do
	command -v "$c" >/dev/null || die "$c is missing after the apt install"
done
say "$(slurmctld -V), $(munged --version 2>&1 | awk '{print $1; exit}')"
start=$SECONDS # the time budget counts from here

# ---- temporary directory and cleanup ------------------------------------
tmp=$(mktemp -d /tmp/chexpercept-slurm-e2e.XXXXXX)
mkdir -p "$tmp"/{bin,munge,slurm/state,slurm/spool,logs,work}
# munged wants every directory above its socket searchable by all.
chmod 0711 "$tmp" "$tmp/munge"
conf=$tmp/slurm/slurm.conf
pids=() # daemons and servers started here, stopped in reverse order

dump_logs() { # job output first, the daemons' logs last
	echo "---- diagnostics ($tmp) ----" >&2
	[ -f "$conf" ] && SLURM_CONF=$conf squeue -a 2>&1 | sed 's/^/squeue: /' >&2
	local f
	for f in "$tmp"/logs/chexpercept-*.out "$tmp"/logs/{phantom,build,plain,serve-baseline}.log \
		"$tmp"/logs/results.diff "$tmp"/logs/munged.log "$tmp"/logs/slurmd.{out,log} "$tmp"/logs/slurmctld.{out,log}; do
		[ -s "$f" ] || continue
		echo "---- logs/${f##*/} (last 30 lines)" >&2
		tail -n 30 "$f" >&2
	done
}

# ours PID: a job step or job of this test's cluster (they outlive slurmd):
# slurmstepd or chexpercept with this test's slurm.conf in its environment.
ours() {
	case $(cat "/proc/$1/comm" 2>/dev/null) in slurmstepd | chexpercept) ;; *) return 1 ;; esac
	tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | grep -qxF "SLURM_CONF=$conf"
}

cleanup() {
	local rc=$?
	set +e
	[ $rc -ne 0 ] && dump_logs
	if [ -f "$conf" ] && [ ${#pids[@]} -gt 0 ]; then
		SLURM_CONF=$conf scancel --quiet --user=root 2>/dev/null
		for _ in $(seq 50); do
			[ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
	local i p
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[i]}
		kill -TERM "$p" 2>/dev/null || continue
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# Nothing of ours should be left after scancel; never leave anything.
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		ours "$p" && kill -KILL "$p" 2>/dev/null
	done
	if [ "${SLURM_E2E_KEEP:-0}" = 1 ]; then
		echo "slurm-e2e: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
	[ $rc -eq 0 ] && echo "slurm-e2e: PASS in $((SECONDS - start)) s after the install ($((SECONDS - script_start)) s in all)"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds.
wait_for() {
	local limit=$1 what=$2
	shift 2
	local until=$((SECONDS + limit))
	until "$@"; do
		[ $SECONDS -lt $until ] || die "timed out after $limit s waiting for $what"
		sleep 0.2
	done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # a port nothing listens on, from a range chosen by PID
	local p
	for ((p = 20000 + ($$ % 20000); p < 65000; p++)); do
		port_free "$p" && port_free $((p + 1)) && { echo "$p"; return; }
	done
	die "no free loopback port"
}

# ---- munge ----------------------------------------------------------------
msock=$tmp/munge/munge.socket
head -c 1024 /dev/urandom >"$tmp/munge/munge.key"
chmod 0400 "$tmp/munge/munge.key"
munged --foreground --socket="$msock" --key-file="$tmp/munge/munge.key" \
	--pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" \
	--log-file="$tmp/logs/munged.log" >>"$tmp/logs/munged.log" 2>&1 &
pids+=($!)
wait_for 10 "munged's socket" test -S "$msock"
munge --socket="$msock" -n | unmunge --socket="$msock" >/dev/null ||
	die "munge credential round trip failed"
say "munged up ($msock)"

# ---- slurm.conf and the daemons ---------------------------------------------
host=$(hostname -s)
# NoCtldInAddrAny/NoInAddrAny make the daemons bind the address the host name
# resolves to, which must be a loopback one (Debian maps it to 127.0.1.1).
addr=$(getent ahostsv4 "$host" | awk 'NR == 1 {print $1}')
case $addr in
127.*) ;;
"") die "host name $host does not resolve; slurmd needs it (add '127.0.1.1 $host' to /etc/hosts)" ;;
*) die "host name $host resolves to $addr, not to a loopback address, and Slurm would listen there; map it to 127.0.1.1 in /etc/hosts" ;;
esac
ctld_port=$(free_port)
mem_mb=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 9 / 10240 ))
cat >"$conf" <<EOF
# Generated by scripts/slurm-e2e.sh for one test run; removed afterwards.
ClusterName=chexpercept-e2e
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$((ctld_port + 1))
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$msock
StateSaveLocation=$tmp/slurm/state
SlurmdSpoolDir=$tmp/slurm/spool
SlurmctldPidFile=$tmp/slurm/slurmctld.pid
SlurmdPidFile=$tmp/slurm/slurmd.pid
SlurmctldLogFile=$tmp/logs/slurmctld.log
SlurmdLogFile=$tmp/logs/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=2 RealMemory=$mem_mb State=UNKNOWN
PartitionName=e2e Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf
slurmctld -D -c -f "$conf" >>"$tmp/logs/slurmctld.out" 2>&1 &
pids+=($!)
ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
wait_for 20 "slurmctld to answer" ctld_up
slurmd -D -f "$conf" -N "$host" >>"$tmp/logs/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { [ "$(sinfo -h -n "$host" -o %T 2>/dev/null)" = idle ]; }
wait_for 30 "node $host to be idle" node_idle
say "slurmctld and slurmd up: node $host, 2 CPUs, ${mem_mb} MB, ports $ctld_port-$((ctld_port + 1))"
# Loopback only: no TCP listener on the two Slurm ports may be outside
# 127.0.0.0/8 (/proc/net/tcp holds addresses as little-endian hex, so those
# end in 7F; any IPv6 listener other than ::1 is exposed). The ports are
# compared as strings: awk would compare hex that looks like a number in
# exponent notation as numbers, and 07E8 (port 2024) equals 70E7 (28903).
exposed=$(awk -v p1="$(printf '%04X' "$ctld_port")" -v p2="$(printf '%04X' $((ctld_port + 1)))" '
	FNR > 1 && $4 == "0A" {
		split($2, a, ":")
		port = a[2] ""
		if ((port == p1 "" || port == p2 "") && a[1] !~ /7F$/ && a[1] != "00000000000000000000000001000000") print $2
	}' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
[ -z "$exposed" ] || die "Slurm listens outside loopback ($exposed in /proc/net/tcp*); NoCtldInAddrAny/NoInAddrAny bind what $host resolves to"

# ---- chexpercept, benchmark, server -----------------------------------------
t=$SECONDS
go build -o "$tmp/bin/chexpercept" ./cmd/chexpercept
export PATH="$tmp/bin:$PATH" # the jobs inherit it (sbatch --export=ALL)
say "built chexpercept in $((SECONDS - t)) s"
t=$SECONDS
bench=$tmp/bench
chexpercept phantom --out "$tmp/phantom" --cases-per-lesion 3 --phantom-seed 1 >"$tmp/logs/phantom.log" 2>&1
chexpercept build --source "$tmp/phantom/manifest.jsonl" --out "$bench" --accept-all \
	--per-lesion 1,1,1 >"$tmp/logs/build.log" 2>&1
nrec=$(jq length "$bench/chexpercept.json")
say "built a $nrec-case phantom benchmark in $((SECONDS - t)) s"

chexpercept serve-baseline --policy random --listen 127.0.0.1:0 --latency "$SLURM_E2E_LATENCY" \
	>"$tmp/logs/serve.url" 2>"$tmp/logs/serve-baseline.log" &
pids+=($!)
wait_for 10 "serve-baseline's URL" test -s "$tmp/logs/serve.url"
endpoint=$(head -n 1 "$tmp/logs/serve.url")
case $endpoint in http://127.0.0.1:*) ;; *) die "serve-baseline printed $endpoint, want a 127.0.0.1 URL" ;; esac
case $endpoint in */v1) ;; *) endpoint=$endpoint/v1 ;; esac
say "serve-baseline (random, $SLURM_E2E_LATENCY per reply) at $endpoint"

run=opensource_qwen3.6-27b/oracle_none # the run directory eval-array.sh writes

# ---- functions for jobs ---------------------------------------------------------
# submit_array RESULTS CACHE: eval-array.sh as a 4-task array; prints the job id.
# Only the scheduler options are changed on the command line: 4 tasks instead
# of 8, and 1 CPU and 1 GB each so that two tasks run at once on this node.
submit_array() {
	sbatch --parsable --array=0-3 --cpus-per-task=1 --mem=1G --time=10 \
		--chdir="$tmp/work" --output="$tmp/logs/%x-%A_%a.out" \
		--export="ALL,BENCH=$bench,RESULTS=$1,ENDPOINT=$endpoint,CACHE=$2" \
		deploy/slurm/eval-array.sh
}

# submit_merge JOBID RESULTS: the merge line of eval-array.sh's header.
submit_merge() {
	local jobid=$1 RESULTS=$2 BENCH=$bench
	sbatch --parsable --job-name=chexpercept-merge --mem=1G --time=10 \
		--chdir="$tmp/work" --output="$tmp/logs/%x-%j.out" --dependency=afterany:"$jobid" --wrap \
		"chexpercept merge $RESULTS/opensource_qwen3.6-27b/oracle_none --out $RESULTS/merged --benchmark $BENCH --force"
}

# states JOBID: "id state exitcode" for the job or every task of the array.
states() {
	scontrol show job -o "$1" | tr ' ' '\n' |
		awk -F= '$1=="JobId"{id=$2} $1=="ArrayTaskId"{id=id"/"$2} $1=="JobState"{st=$2} $1=="ExitCode"{print id, st, $2}'
}

# wait_done JOBID...: until none is pending, running or completing.
jobs_ended() { [ -z "$(squeue -h -j "$(IFS=,; echo "$*")" -o %i 2>/dev/null)" ]; }
wait_done() { wait_for "$SLURM_E2E_WAIT" "jobs $* to end" jobs_ended "$@"; }

# expect_states JOBID WANT: every task or job of JOBID ended as WANT ("COMPLETED 0:0").
expect_states() {
	local bad
	bad=$(states "$1" | awk -v w="$2" '$2" "$3 != w')
	[ -z "$bad" ] || die "job $1: want every task $2, got:"$'\n'"$bad"
}

# jsonl_equal A B [FIELDS]: the results.jsonl of run directories A and B hold
# the same lines, sorted, once §9.5's timing fields (plus FIELDS of every
# turn, e.g. ", .cached") are dropped; the diff goes to logs/results.diff.
jsonl_equal() {
	local norm="del(.started_at, .finished_at) | .turns |= map(del(.latency_ms, .total_ms, .attempts${3:-}))"
	diff <(jq -cS "$norm" "$1/results.jsonl" | sort) <(jq -cS "$norm" "$2/results.jsonl" | sort) >"$tmp/logs/results.diff"
}

# same_files A B: all_results.json and model_performance_summary.csv
# byte-identical, manifest.json equal but for created_at.
same_files() {
	cmp "$1/all_results.json" "$2/all_results.json" || die "all_results.json differ: $1 $2"
	cmp "$1/model_performance_summary.csv" "$2/model_performance_summary.csv" ||
		die "model_performance_summary.csv differ: $1 $2"
	diff <(jq -S 'del(.created_at)' "$1/manifest.json") <(jq -S 'del(.created_at)' "$2/manifest.json") >&2 ||
		die "manifest.json differ beyond created_at: $1 $2"
}

log_of() { echo "$tmp/logs/chexpercept-eval-${1}_$2.out"; } # JOBID TASK

# ---- reference: one unsharded run ------------------------------------------------
t=$SECONDS
chexpercept eval --benchmark "$bench" --provider opensource --model qwen3.6-27b \
	--endpoint "$endpoint" --oracle none --concurrency 32 --retry-errors \
	--cache-dir "$tmp/cache-plain" --out "$tmp/plain" >"$tmp/logs/plain.log" 2>&1 ||
	die "unsharded eval failed (logs/plain.log)"
plain=$tmp/plain/$run
[ "$(wc -l <"$plain/results.jsonl")" -eq "$nrec" ] || die "unsharded run has $(wc -l <"$plain/results.jsonl") records, want $nrec"
say "unsharded reference run: $nrec records in $((SECONDS - t)) s"

# ---- pass 1: array + afterany merge ------------------------------------------------
t=$SECONDS
r1=$tmp/pass1
job=$(submit_array "$r1" "$tmp/cache1")
merge=$(submit_merge "$job" "$r1")
say "pass 1: array job $job (tasks 0-3), merge job $merge (afterany:$job)"
wait_done "$job" "$merge"
expect_states "$job" "COMPLETED 0:0"
expect_states "$merge" "COMPLETED 0:0"
grep -q "merged 4 shards" "$tmp/logs/chexpercept-merge-$merge.out" ||
	die "merge output lacks 'merged 4 shards' (logs/chexpercept-merge-$merge.out)"
same_files "$plain" "$r1/merged/$run"
jsonl_equal "$plain" "$r1/merged/$run" ||
	die "results.jsonl differ beyond the timing fields (logs/results.diff): $plain $r1/merged/$run"
say "pass 1: 4 tasks COMPLETED, merged run equals the unsharded one (§9.5) — $((SECONDS - t)) s"

# ---- pass 2: kill task 0 mid-run, merge, resubmit, merge again ---------------------
t=$SECONDS
r2=$tmp/pass2
shard1=$r2/$run/shard-1-of-4/results.jsonl # task 0's shard
want1=$(jq -s 'map(select(.index % 4 == 0)) | length' "$plain/results.jsonl")
job=$(submit_array "$r2" "$tmp/cache2")
merge=$(submit_merge "$job" "$r2")
say "pass 2: array job $job, merge job $merge; killing task 0 once its shard holds 1 to $((want1 - 1)) of $want1 records"
lines1() { [ -f "$shard1" ] && wc -l <"$shard1" || echo 0; }
midrun() { local n; n=$(lines1); [ "$n" -ge 1 ] && [ "$n" -lt "$want1" ]; }
wait_for "$SLURM_E2E_WAIT" "task 0 to be mid-run" midrun
task_id=$(squeue -h -j "${job}_0" -o %A)
victim=
for p in /proc/[0-9]*; do
	[ "$(cat "$p/comm" 2>/dev/null)" = chexpercept ] || continue
	tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "SLURM_JOB_ID=$task_id" && victim=${p#/proc/}
done
[ -n "$victim" ] || die "no chexpercept process of job $task_id (task ${job}_0) found"
kill -KILL "$victim" || die "task 0 (pid $victim) ended before the kill; raise SLURM_E2E_LATENCY"
done_at_kill=$(lines1)
[ "$done_at_kill" -lt "$want1" ] || die "task 0 wrote all its records before the kill; raise SLURM_E2E_LATENCY"
say "pass 2: kill -9 $victim (task ${job}_0, job $task_id) with $done_at_kill of $want1 records written"
wait_done "$job" "$merge"
st=$(states "$job" | awk '$1 ~ /\/0$/ {print $2" "$3}')
case $st in FAILED*) ;; *) die "killed task ended as '$st', want FAILED" ;; esac
expect_states "$merge" "COMPLETED 0:0"
n=$(wc -l <"$r2/merged/$run/results.jsonl")
[ "$n" -lt "$nrec" ] || die "the merge after the kill has $n records, want fewer than $nrec"
sed 's/^/    merge: /' "$tmp/logs/chexpercept-merge-$merge.out"
say "pass 2: task 0 $st, the afterany merge ran and holds $n of $nrec records"

# Resubmit the whole array, as eval-array.sh's header says.
first=$job
job=$(submit_array "$r2" "$tmp/cache2")
merge=$(submit_merge "$job" "$r2")
say "pass 2: resubmitted as array job $job, merge job $merge"
wait_done "$job" "$merge"
expect_states "$job" "COMPLETED 0:0"
expect_states "$merge" "COMPLETED 0:0"
for i in 1 2 3; do
	grep -q "nothing to ask" "$(log_of "$job" "$i")" ||
		die "task $i of the resubmission asked records again ($(log_of "$job" "$i"))"
done
grep -q "already done" "$(log_of "$job" 0)" || die "task 0 did not resume ($(log_of "$job" 0))"
{ grep "^asking" "$(log_of "$job" 0)" || true; } | sed 's/^/    task 0: /'
merged=$r2/merged/$run
same_files "$plain" "$merged"
if jsonl_equal "$plain" "$merged"; then
	say "pass 2: task 0 resumed and finished, tasks 1-3 had nothing to ask; merged run equals the unsharded one (§9.5) — $((SECONDS - t)) s"
else
	# The resumed task re-asks the records the kill interrupted, and the
	# turns it had asked before the kill come from its response cache
	# (cached: true, cost_usd 0 where a live call of an unpriced model
	# records null). §9.5 drops only timing fields, so allow exactly these
	# two fields to differ, and only on the killed task's records.
	jsonl_equal "$plain" "$merged" ", .cached, .cost_usd" ||
		die "results.jsonl differ beyond the timing fields and the cache fields (logs/results.diff): $plain $merged"
	hits=$(jq -s '[.[] | select(.index % 4 == 0) | .turns[] | select(.cached)] | length' "$merged/results.jsonl")
	stray=$(jq -s '[.[] | select(.index % 4 != 0) | .turns[] | select(.cached)] | length' "$merged/results.jsonl")
	[ "$stray" -eq 0 ] || die "$stray cached turns in records of tasks that were not killed ($merged/results.jsonl)"
	say "pass 2: task 0 resumed and finished, tasks 1-3 had nothing to ask; merged run equals the unsharded one (§9.5) except for $hits turns task 0 took from its response cache on resuming (fields cached, cost_usd) — $((SECONDS - t)) s"
fi
say "array jobs of pass 2: $first (killed), $job (resubmitted)"

elapsed=$((SECONDS - start))
[ "$elapsed" -le "$SLURM_E2E_BUDGET" ] || die "took $elapsed s after the install, over the budget of $SLURM_E2E_BUDGET s"
