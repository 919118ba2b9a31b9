#!/usr/bin/env bash
# Slurm array: one task per shard. `--shard auto/N` takes the shard from
# SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1, so keep --array a
# contiguous range A-B (optionally %K). Tasks that are requeued or rerun
# resume their shard, and --retry-errors makes them re-ask the records that
# ended in error too. RESULTS must be on a file system every node sees.
# Each task keeps its own response cache under $CACHE: the cache is SQLite in
# WAL mode, which processes on different nodes must not share over a network
# file system; a task always gets the same records, so nothing is lost.
#
# Checked against the CLI and the registry by
# `go test ./cmd/chexpercept -run Deploy`, and run unchanged on a one-node
# Slurm 22.05 by scripts/slurm-e2e.sh (in CI): 4 tasks and the merge below,
# then a task killed mid-run and the array submitted again. sbatch options
# on the command line override the #SBATCH lines, e.g.
# `sbatch --array=0-3 --cpus-per-task=1 --mem=1G eval-array.sh`.
#
# Submit, then merge once all tasks have ended, however they ended:
#
#   jobid=$(sbatch --parsable deploy/slurm/eval-array.sh)
#   sbatch --dependency=afterany:$jobid --wrap \
#     "chexpercept merge $RESULTS/opensource_qwen3.6-27b/oracle_none --out $RESULTS/merged --benchmark $BENCH --force"
#
# afterany, not afterok: a task whose shard has records that ended in error
# (after --max-retries) exits 1, so afterok would never start the merge.
# merge still refuses (exit 2) a missing shard folder (a task that never
# started); otherwise it writes the run, keeping error records in
# results.jsonl with status error (counted on stderr, left out of
# all_results.json) and warning about selected records that no shard has
# (a task that hit --time). To re-ask those, submit this script again as a
# whole: finished shards exit at once, the others resume and re-ask their
# errors. Never resubmit one index alone (--array=3): auto/N counts the
# tasks of the submission. Then merge again (--force replaces the merge).
#
#SBATCH --job-name=chexpercept-eval
#SBATCH --array=0-7
#SBATCH --cpus-per-task=2
#SBATCH --mem=4G
#SBATCH --time=12:00:00
#SBATCH --requeue
set -euo pipefail
: "${BENCH:?set BENCH to the benchmark directory}"
: "${RESULTS:?set RESULTS to the results folder}"
: "${ENDPOINT:=http://vllm-host:8000/v1}"
: "${CACHE:=$HOME/.cache/chexpercept}"
SHARDS=$(( SLURM_ARRAY_TASK_MAX - SLURM_ARRAY_TASK_MIN + 1 ))
exec chexpercept eval \
  --benchmark "$BENCH" \
  --provider opensource --model qwen3.6-27b \
  --endpoint "$ENDPOINT" \
  --oracle none --concurrency 32 \
  --shard "auto/$SHARDS" --retry-errors \
  --cache-dir "$CACHE/task-$SLURM_ARRAY_TASK_ID" \
  --out "$RESULTS"
