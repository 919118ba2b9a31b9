#!/usr/bin/env bash
# bench-read.sh — the browser apps under load: many readers of the reading
# app, many reviewers of the review app, at once, through the real HTTP flow.
#
# Makes a small benchmark (phantom, 3 cases a lesion, build --accept-all:
# 21 records), then for each reader count creates a reading study with
# that many readers, starts `read serve` on a loopback port and runs the
# load driver (scripts/benchload): every reader signs in at the same
# moment from one address and answers every turn (page, images, answer
# POST with its CSRF token) until the end page. Then the same for the
# review app: `review init` of the phantom source with that many
# reviewers, each reviewer opening every case of its queue (page, images)
# and accepting it. Prints, per run, the errors (any status >= 400 or
# transport failure), p50/p95/p99 of the answer POSTs and image GETs, the
# server's peak RSS, and the load average before and after.
#
# Usage: scripts/bench-read.sh [--readers "1 30 60 100"] [--reviewers "6 30"] [--duration 5m]
# Targets: 100 readers, 0 errors; p99 answer POST <= 300 ms at 60 readers;
# 30 reviewers: image GET p95 <= 200 ms, server peak RSS <= 300 MiB (on
# 2 idle cores).
set -euo pipefail
cd "$(dirname "$0")/.."
readers="1 30 60 100" reviewers="6 30" duration=5m
while [ $# -gt 0 ]; do
	case "$1" in
	--readers) readers="${2:?}"; shift ;;
	--reviewers) reviewers="${2:?}"; shift ;;
	--duration) duration="${2:?}"; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-read.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done

work=$(mktemp -d /tmp/chexpercept-bench-read.XXXXXX)
server=""
cleanup() {
	if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/chexpercept" ./cmd/chexpercept
go build -o "$work/benchload" ./scripts/benchload
bin="$work/chexpercept"
"$bin" phantom --out "$work/src" --cases-per-lesion 3 --phantom-seed 1 >/dev/null
"$bin" build --source "$work/src/manifest.jsonl" --out "$work/bench" --accept-all --per-lesion 1,1,1 >/dev/null 2>&1

# serve LOG ARGS...: starts a server in the background, waits for the URL
# it prints on its first line.
serve() {
	local log="$1"; shift
	"$bin" "$@" --listen 127.0.0.1:0 --quiet >"$log" 2>"$log.err" &
	server=$!
	for _ in $(seq 1 300); do
		if [ -s "$log" ]; then url=$(head -n1 "$log"); return 0; fi
		kill -0 "$server" 2>/dev/null || { cat "$log.err" >&2; exit 1; }
		sleep 0.1
	done
	echo "bench-read.sh: the server printed no URL" >&2; exit 1
}
stop() {
	local peak
	peak=$(awk '/VmHWM/ {printf "%.0f MiB", $2/1024}' "/proc/$server/status" 2>/dev/null || echo "?")
	kill "$server"; wait "$server" 2>/dev/null || true; server=""
	echo "  server peak RSS $peak; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $readers; do
	rm -f "$work/read.db"
	"$bin" read init --benchmark "$work/bench" --db "$work/read.db" --readers "$n" --seed 1 >"$work/read.tokens" 2>/dev/null
	serve "$work/read.log" read serve --db "$work/read.db"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	"$work/benchload" -app read -url "$url" -tokens "$work/read.tokens" -users "$n" -duration "$duration"
	stop
done
for n in $reviewers; do
	rm -f "$work/review.db"
	"$bin" review init --source "$work/src/manifest.jsonl" --review-db "$work/review.db" --reviewers "$n" --overlap 2 >"$work/review.tokens" 2>/dev/null
	serve "$work/review.log" review serve --review-db "$work/review.db"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	"$work/benchload" -app review -url "$url" -tokens "$work/review.tokens" -users "$n" -duration "$duration"
	stop
done
