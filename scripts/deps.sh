#!/usr/bin/env bash
# The import contract of docs/architecture.md, checked from the package graph:
# whatever reads or writes a run directory links no model SDK, the builder
# links neither SQLite nor the web layer, the web layer links no SQL (the
# apps' accounts and sessions live in accountdb), and the operations on whole runs
# and the reading study name run directories through rundir, not the runner;
# the statistics package and the CSV record cap (shared by the CheXmask
# reader and the self-contained mrmc) are leaves. The two contracts stay
# types: benchmark and results do no file I/O and export fewer than 90
# names each, and the protocol engine, the analysis and the report link
# neither's readers and writers (benchdir, rundir). The model clients
# cannot reach a type that holds the ground truth. The packages that carry a
# command's life (job, atomicfile, appdb, outdir) and the command layer keep
# no mutable state at package level (scripts/pkgstate.go states the rule).
# Exits non-zero naming every rule that is broken.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
fail=0

# forbid PACKAGE PATTERN WHY: no dependency of PACKAGE may match PATTERN.
forbid() {
  local pkg=$1 pattern=$2 why=$3 hits
  hits=$(go list -deps "./internal/$pkg" | grep -vx "$mod/internal/$pkg" | grep -E "$pattern" || true)
  if [ -n "$hits" ]; then
    echo "deps: internal/$pkg links $why:"
    sed 's/^/  /' <<<"$hits" | head -5
    fail=1
  fi
}

sdks='^(github\.com/openai/|google\.golang\.org/(genai|grpc|protobuf)|cloud\.google\.com/|github\.com/Azure/)'
for pkg in results rundir runset analysis report runs; do
  forbid "$pkg" "$sdks" "a model SDK, gRPC or protobuf"
done
forbid build '^(modernc\.org/sqlite|'"$mod"'/internal/(webapp|review|appdb))$' "SQLite or the review app"
forbid webapp '^(modernc\.org/sqlite|database/sql|'"$mod"'/internal/(appdb|accountdb))$' "an SQL driver or database/sql (accounts and sessions are the apps' Backend, accountdb)"
for pkg in runs reading; do
  forbid "$pkg" "^$mod/internal/eval\$" "the runner (internal/eval)"
done
for pkg in benchmark results; do
  forbid "$pkg" "^$mod/internal/(atomicfile|outdir|safefile|imagefile|appdb|benchdir|rundir)\$" "a file reader or writer (it is a model: types and pure functions)"
done
for pkg in protocol analysis report; do
  forbid "$pkg" "^$mod/internal/(benchdir|rundir)\$" "the readers and writers of benchmark or run directories (it works on types)"
done
forbid provider "^$mod/internal/(benchmark|protocol|results)\$" "a type that holds the ground truth (a request carries only what is sent)"
if ! go run scripts/exported.go -max 90 internal/benchmark internal/results >/dev/null; then
  echo "deps: a contract exports too many names:"
  go run scripts/exported.go -max 90 internal/benchmark internal/results | sed 's/^/  /' || true
  fail=1
fi
forbid stats "^$mod/internal/" "a project package (it is a leaf)"
forbid csvcap "^$mod/internal/" "a project package (it is a leaf: mrmc, self-contained, imports it)"

# No package-level mutable state where a command's life is carried: the job
# (interruption, temporaries, commit point), the writers that register on
# it, and the command tree. Allowed: sentinel errors (errors.New) and
# unexported constant tables that nothing writes; see scripts/pkgstate.go.
if ! state=$(go run scripts/pkgstate.go internal/job internal/atomicfile internal/appdb internal/outdir cmd/chexpercept 2>&1); then
  echo "deps: package-level mutable state:"
  grep -v '^exit status ' <<<"$state" | sed 's/^/  /'
  fail=1
fi

if [ "$fail" -ne 0 ]; then exit 1; fi
echo "deps: the import contract holds"
