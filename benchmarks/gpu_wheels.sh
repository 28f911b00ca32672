#!/usr/bin/env bash
# Download, here (where the package registries answer), the wheels that benchmarks/bench_trl_gpu.py needs on
# a lent GPU machine that has transformers, accelerate, pyarrow and pandas but no trl or datasets (its
# package list: /work/.library/env and the device tool's KINDS.md). They go to .whl/ (ignored by git through
# .git/info/exclude); a device call carries it (carry: [".whl"]) and `gpu_session.sh trl` installs them.
#
#   bash benchmarks/gpu_wheels.sh            # ~2 MB: trl, datasets, dill, multiprocess for CPython 3.12
set -eu
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  "trl==${TRL_VERSION:-1.16.0}" "datasets==${DATASETS_VERSION:-5.2.0}" dill==0.4.1 multiprocess==0.70.19
ls -la .whl
