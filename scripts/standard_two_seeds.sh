#!/usr/bin/env bash
# The standard edition's two-seed check: the prepare at SEED (replicates SEED..SEED+4) in
# two 1-thread processes, the zoo first (units 0-14) so that no two processes train one model, then the
# verdicts of the claims whose chapters the edition executed, at seed 0 and at SEED (two 1-thread processes;
# a seed whose file exists computes only the claims it lacks), and their comparison. Every stage resumes
# from the store ($OVERINTERP_ARTIFACTS, outside the work tree): run it again after an interruption and it
# continues where it stopped (docs/editions.md).
#
#   OVERINTERP_ARTIFACTS=~/.cache/overinterp/artifacts nohup bash scripts/standard_two_seeds.sh 5 &
set -euo pipefail
SEED=${1:-5}
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
: "${OVERINTERP_ARTIFACTS:?set OVERINTERP_ARTIFACTS to the store of the standard edition}"
LOGS=${LOGS:-$HOME/.cache/overinterp/logs}
ED=${EDITION:-editions/fashion-mnist-standard}
# the claims of the chapters the edition executed (its manifest), in the registry's order
CLAIMS=$("$PY" -c 'import json, sys; from overinterp.paper.claims import CLAIMS
chapters = json.load(open(sys.argv[1]))["chapters"]
print(" ".join(c for c, claim in CLAIMS.items() if claim.chapter in chapters))' "$ED/manifest.json")
mkdir -p "$LOGS"

# a prepare of this seed already running (started by hand or by an earlier run of this script): let it finish
while pgrep -f "overinterp prepare --profile standard --seed $SEED" > /dev/null; do sleep 30; done

stage() {  # two 1-thread ranks of one prepare stage; a failed rank fails the script
  local name=$1; shift
  echo "[two-seeds] $(date -u +%H:%M) prepare seed $SEED: $name"
  local pids=()
  for r in 0 1; do
    OMP_NUM_THREADS=1 RANK=$r WORLD_SIZE=2 "$PY" -m overinterp prepare --profile standard --seed "$SEED" "$@" \
      --log "$LOGS/seed$SEED-$name.jsonl" > "$LOGS/seed$SEED-$name-rank$r.log" 2>&1 & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
}
stage zoo --shards 0:15
stage rest

# both seeds' verdicts side by side, one thread each (SEED's computes what its claims lack: Springer's dilated
# retraining of chapter 8 alone is ~1.5 process-hours); where a seed's file exists, only the claims it lacks
# (a chapter the edition executed later), merged into it (verdicts --merge)
missing() {  # the claims of $CLAIMS without a row in the verdicts file $1
  "$PY" -c 'import json, sys; have = {r["claim"] for r in json.load(open(sys.argv[1]))["rows"]}
print(" ".join(c for c in sys.argv[2:] if c not in have))' "$1" $CLAIMS
}
pids=()
for s in 0 "$SEED"; do
  f="$ED/verdicts-seed$s.json"
  if [ -f "$f" ]; then only=$(missing "$f"); merge=--merge; else only=$CLAIMS; merge=; fi
  [ -z "$only" ] && { echo "[two-seeds] seed $s: $f has every claim"; continue; }
  echo "[two-seeds] $(date -u +%H:%M) verdicts seed $s: $only"
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 "$PY" -m overinterp verdicts --profile standard --seed "$s" --only $only $merge \
    --json "$f" > "$LOGS/verdicts-seed$s.log" 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
"$PY" benchmarks/bench_verdicts.py --profile standard --seeds 0 "$SEED" \
  --reuse "0=$ED/verdicts-seed0.json" "$SEED=$ED/verdicts-seed$SEED.json" --out "$ED/verdicts-seeds.json" \
  || echo "[two-seeds] a verdict flips between the seeds (the file names it)"
echo "[two-seeds] $(date -u +%H:%M) done: $ED/verdicts-seeds.json"
