#!/usr/bin/env bash
# bench-build.sh — the builder's performance benchmark.
#
# Generates `phantom --cases-per-lesion 250`, builds the full 2,100-case
# benchmark with --accept-all, and prints the build time beside the
# PNG-encoding floor measured in the same run (every PNG of chexpercept/
# and masks/ re-encoded with the same encoder and worker count; see
# build_timing.json) and the peak RSS. Targets: build ≤ 1.3 × floor (the
# floor is every output PNG encoded once by the standard library's
# encoder at its default level; the build renders the bundle while
# processing goes on, with chexpercept's own PNG writer unless PNG=standard
# or PNG=fast sets bundle_png_compression), peak RSS < 1 GiB. The load
# average is printed before and after: figures from a shared machine are
# not comparable.
#
# Environment: CASES_PER_LESION (250), PER_LESION (100,100,100; a scaled
# run such as CASES_PER_LESION=25 PER_LESION=10,10,10 gives the same
# build/floor ratio in a tenth of the time), WORKERS (nproc), BENCH_DIR
# (/tmp/chexpercept-bench), SEED (1), KEEP_PHANTOM=1 to reuse an existing
# phantom set, PROFILE=FILE to write a CPU profile of the build to FILE
# (go tool pprof -top "$BENCH_DIR/chexpercept" FILE), PNG=standard or
# PNG=fast to build with that bundle_png_compression (default: default).
set -euo pipefail

cd "$(dirname "$0")/.."
N=${CASES_PER_LESION:-250}
PER_LESION=${PER_LESION:-100,100,100}
WORKERS=${WORKERS:-$(nproc)}
DIR=${BENCH_DIR:-/tmp/chexpercept-bench}
SEED=${SEED:-1}

if [ ! -x /usr/bin/time ]; then
	echo "bench-build: /usr/bin/time is missing (apt-get install time)" >&2
	exit 2
fi
mkdir -p "$DIR"
go build -o "$DIR/chexpercept" ./cmd/chexpercept

if [ "${KEEP_PHANTOM:-0}" != 1 ] || [ ! -f "$DIR/phantom/manifest.jsonl" ]; then
	rm -rf "$DIR/phantom"
	echo "phantom: $N cases per lesion and label…"
	"$DIR/chexpercept" phantom --out "$DIR/phantom" --cases-per-lesion "$N" --phantom-seed "$SEED" --workers "$WORKERS" >/dev/null
fi

rm -rf "$DIR/bench"
config=()
case "${PNG:-default}" in
default) ;;
standard | fast)
	printf 'bundle_png_compression: %s\n' "$PNG" >"$DIR/png.yaml"
	config=(--config "$DIR/png.yaml")
	;;
*)
	echo "bench-build: PNG=$PNG is not default, standard or fast" >&2
	exit 2
	;;
esac
echo "load average before the build: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "build: targets $PER_LESION per lesion, $WORKERS workers, bundle_png_compression ${PNG:-default}…"
CHEXPERCEPT_CPUPROFILE="${PROFILE:-}" /usr/bin/time -v -o "$DIR/time.txt" \
	"$DIR/chexpercept" build --source "$DIR/phantom/manifest.jsonl" --out "$DIR/bench" \
	--per-lesion "$PER_LESION" --workers "$WORKERS" --accept-all --measure-png-floor "${config[@]}" >"$DIR/build.log" 2>&1 || {
	echo "build failed; see $DIR/build.log" >&2
	exit 1
}
tail -n 14 "$DIR/build.log"
echo "load average after the build: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$DIR" <<'PY'
import json, re, sys
d = sys.argv[1]
t = json.load(open(f"{d}/bench/build_timing.json"))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f"{d}/time.txt").read()).group(1))
du = t["durations_seconds"]
fl = t["png_floor"]
print(f"workers            {t['workers']}")
print(f"processing         {du['processing']:.1f} s")
print(f"assembly           {du['assembly']:.1f} s")
print(f"build (total)      {du['build']:.1f} s")
print(f"PNG floor          {fl['seconds']:.1f} s over {fl['files']} files")
print(f"build / floor      {fl['build_over_floor']:.2f}  (target ≤ 1.3)")
print(f"peak RSS           {rss/1024:.0f} MiB  (target < 1024 MiB)")
PY
