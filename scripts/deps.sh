#!/usr/bin/env bash
# The import contract of docs/architecture.md, checked from the package graph:
# whatever reads or writes a run directory links no model SDK, the builder
# links neither SQLite nor the web layer, and the operations on whole runs
# and the reading study name run directories through results, not the runner;
# the statistics package and the CSV record cap (shared by the CheXmask
# reader and the self-contained mrmc) are leaves. The packages that carry a
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
for pkg in results analysis report runs; do
  forbid "$pkg" "$sdks" "a model SDK, gRPC or protobuf"
done
forbid build '^(modernc\.org/sqlite|'"$mod"'/internal/(webapp|review|appdb))$' "SQLite or the review app"
for pkg in runs reading; do
  forbid "$pkg" "^$mod/internal/eval\$" "the runner (internal/eval)"
done
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
