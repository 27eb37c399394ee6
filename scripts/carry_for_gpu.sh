#!/usr/bin/env bash
# Run HERE (a machine that reaches PyPI, with `make setup` done) before using the GPU machine:
# fills the git-ignored folder .gpu/ with what that machine lacks (it has torch, torchvision,
# numpy, pandas, matplotlib, seaborn, PyYAML, Pillow, tqdm, requests ... but no Jupyter stack):
#   .gpu/whl/   wheels for executing the chapters (papermill, ipykernel, myst-nb; Python 3.12, x86-64)
#   .gpu/data/  the four Fashion-MNIST .gz files and the built fashion-mnist-c sample
# About 45 MiB: carry it with the device tool (carry: [".gpu"]) and start the command with
#   bash scripts/gpu_edition.sh "$OUT"
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
rm -rf .gpu && mkdir -p .gpu/whl .gpu/data
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d .gpu/whl papermill ipykernel myst-nb
# the chapters' method libraries, without their requirements (torch, numpy, matplotlib, tqdm are there)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform any -d .gpu/whl captum pyro-ppl pyro-api
# what the GPU machine already has, or what executing a notebook never imports (Sphinx and the renderer;
# docutils stays: myst-nb's glue imports it)
( cd .gpu/whl && rm -f $(ls | grep -i -E "^(sphinx|babel|sqlalchemy|greenlet|alabaster|myst_parser|\
jupyter_cache|pygments|pyyaml|jinja2|markupsafe|requests|urllib3|idna|certifi|charset_normalizer|attrs|packaging|\
typing_extensions|click|tqdm|python_dateutil|six|psutil|imagesize|snowballstemmer|roman_numerals|tabulate|\
markdown_it|mdurl|mdit_py_plugins|importlib_metadata|zipp|aiohttp|aiosignal|aiohappyeyeballs|frozenlist|multidict|\
yarl|propcache)") )
export OVERINTERP_DATA=${OVERINTERP_DATA:-data}
"$PY" -c 'from overinterp.zoo import data; data.load("fashion-mnist", "test"); data.load("fashion-mnist-c", "test")'
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  gzip -c "$OVERINTERP_DATA/FashionMNIST/raw/$f" > ".gpu/data/$f.gz"
done
cp -r "$OVERINTERP_DATA/fashion-mnist-c" .gpu/data/           # the OOD sample (built with imagecorruptions here)
du -sh .gpu
