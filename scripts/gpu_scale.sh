#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the repository root (device tool), carrying .gpu/data (scripts/carry_for_gpu.sh)
# (or only the wheels of Pyro, Captum and opt_einsum in .gpu/methods) and .gpu/store (artifact folders already computed here, e.g. `cp -r $OVERINTERP_ARTIFACTS/model .gpu/store/`):
#   bash scripts/gpu_scale.sh "$OUT" [PROFILE] [SECONDS]
# continues the scale study of PROFILE (default standard) on the GPU for at most SECONDS (default 400), then
# writes the study's JSON ($OUT/scale-PROFILE-cuda.json, once every unit is stored), the prepare log, and
# the models and retrained models computed there ($OUT/store-new.tar.gz: untar it into the store here).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; PROFILE=${2:-standard}; SECONDS_LEFT=${3:-400}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD OVERINTERP_DATA=$PWD/data OVERINTERP_ARTIFACTS=/tmp/store
for w in .gpu/methods .gpu/whl; do   # the chapters' method libraries (Pyro, Captum): the library imports them
  [ -d $w ] && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $w/*.whl && export PYTHONPATH=/tmp/site:$PYTHONPATH
done
mkdir -p data/FashionMNIST/raw
for f in .gpu/data/*.gz; do gunzip -c "$f" > "data/FashionMNIST/raw/$(basename "$f" .gz)"; done
[ -d .gpu/data/fashion-mnist-c ] && cp -r .gpu/data/fashion-mnist-c data/
mkdir -p /tmp/store && cp -r .gpu/store/. /tmp/store/
timeout "$SECONDS_LEFT" python3 -m overinterp prepare --profile "$PROFILE" --study scale --device cuda \
  --log "$OUT/prepare-scale-$PROFILE.jsonl" > /tmp/prepare.log 2>&1
rc=$?; tr '\r' '\n' < /tmp/prepare.log | grep -v "^$" | tail -n 20; echo "prepare exit $rc"
[ $rc -eq 0 ] && python3 -m overinterp scale --profile "$PROFILE" --device cuda --json "$OUT/scale-$PROFILE-cuda.json" 2>&1 | tail -n 20
# bring back the models and retrained models computed here (not carried), as one archive: the backward
# selections (~650 MiB for the standard study) are too large for the device tool's return
new=$(cd /tmp/store && for d in model/*/ retrained/*/; do [ -d "$d" ] && [ ! -d "$OLDPWD/.gpu/store/$d" ] && echo "$d"; done)
[ -n "$new" ] && tar czf "$OUT/store-new.tar.gz" -C /tmp/store $new
du -sh "$OUT" ; nvidia-smi --query-gpu=name --format=csv,noheader
