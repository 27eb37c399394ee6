#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the repository root, with .gpu/ carried (scripts/carry_for_gpu.sh):
#   bash scripts/gpu_edition.sh "$OUT" [--profile gpu] [--budget-s 420]
# installs the carried wheels, stages the data under data/, then runs scripts/gpu_edition.py,
# which continues the edition where the previous call stopped (exit 3: call again).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
if [ -d .gpu/whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
fi
if [ -d .gpu/data ] && [ ! -f data/FashionMNIST/raw/t10k-labels-idx1-ubyte ]; then
  mkdir -p data/FashionMNIST/raw
  for f in .gpu/data/*.gz; do gunzip -c "$f" > "data/FashionMNIST/raw/$(basename "$f" .gz)"; done
  cp -r .gpu/data/fashion-mnist-c data/
fi
exec python3 scripts/gpu_edition.py "$@"
