#!/usr/bin/env bash
# Slurm array: one task per shard. `--shard auto/N` takes the shard from
# SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1, so keep --array a
# contiguous range A-B (optionally %K). Tasks that are requeued or rerun
# resume their shard. RESULTS must be on a file system every node sees.
# Each task keeps its own response cache under $CACHE: the cache is SQLite in
# WAL mode, which processes on different nodes must not share over a network
# file system; a task always gets the same records, so nothing is lost.
#
# Checked against the CLI and the registry by
# `go test ./cmd/chexpercept -run Deploy`; not run on a cluster here.
#
# Submit, then merge once all tasks are done:
#
#   jobid=$(sbatch --parsable deploy/slurm/eval-array.sh)
#   sbatch --dependency=afterok:$jobid --wrap \
#     "chexpercept merge $RESULTS/opensource_qwen3.6-27b/oracle_none --out $RESULTS/merged --benchmark $BENCH"
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
  --shard "auto/$SHARDS" \
  --cache-dir "$CACHE/task-$SLURM_ARRAY_TASK_ID" \
  --out "$RESULTS"
