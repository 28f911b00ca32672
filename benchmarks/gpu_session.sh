#!/usr/bin/env bash
# The GPU checks (issue 15) as one command on a lent GPU machine, where `python3` holds a CUDA torch
# and nothing can be installed: the environment, the gpu-marked tests, the trainer benchmark and the
# at-scale claims of paper_repro/trainer_at_scale.py. The tests stage collects tests/sim and tests/train, where the
# gpu-marked tests are (TESTS= gives others: the whole of tests/ imports orjson and TRL, which the machine lacks, at
# collection, session 43). Each stage logs to $OUT (default out/gpu) and
# the RESULTS.md files it rewrote are copied there, to be merged by hand into the checkout.
#
#   bash benchmarks/gpu_session.sh env tests bench              # ~5 min on an H100
#   bash benchmarks/gpu_session.sh env kernels decode           # the decode step's variants, ~4 min
#   bash benchmarks/gpu_session.sh attention                    # the attention kernel's launch options, ~2 min
#   bash benchmarks/gpu_session.sh trl                          # ours against TRL (needs .whl: gpu_wheels.sh, carried)
#   bash benchmarks/gpu_session.sh packing                      # packed full passes against unpacked, ~1-2 min
#   bash benchmarks/gpu_session.sh moe                          # MoE experts: per-expert matmuls against the buffer, ~1 min
#   bash benchmarks/gpu_session.sh profile                      # one update's variants and profiler table, ~1 min
#   SCALE_WORKERS=16 bash benchmarks/gpu_session.sh groups refresh threshold
#
# Stages: env | tests | kernels (the decode-step tests only) | decode (bench_graph_decode.py) |
# attention (bench_decode_attention.py) | trl (bench_trl_gpu.py) | packing (bench_packing.py) | moe (bench_moe.py) | profile (profile_update.py) | bench |
# groups | refresh | threshold (the last three: trainer_at_scale phases). Every stage but env runs at most
# STAGE_LIMIT seconds (default 600), so that one stuck stage leaves the others' logs.
set -u
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
PY=${PY:-python3}
LIMIT=${STAGE_LIMIT:-600}
save() { cp paper_repro/RESULTS.md "$OUT/paper_RESULTS.md"; cp benchmarks/RESULTS.md "$OUT/bench_RESULTS.md"; }
for stage in "$@"; do
  echo "=== $stage $(date -u +%H:%M:%S)"
  case $stage in
    env) nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
         $PY -c "import torch, sys; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0))"
         $PY -c "import triton; print('triton', triton.__version__)" ;;
    tests) timeout $LIMIT $PY -m pytest -m gpu -q -p no:cacheprovider -o addopts="-ra --strict-markers" ${TESTS:-tests/sim tests/train} 2>&1 | tee "$OUT/gpu_tests.log" | tail -25 ;;
    kernels) timeout $LIMIT $PY -m pytest -m gpu -q -p no:cacheprovider -o addopts="-ra --strict-markers" \
               tests/train/test_triton_attention.py tests/train/test_graph_decode.py 2>&1 | tee "$OUT/kernel_tests.log" | tail -25 ;;
    decode) timeout $LIMIT $PY benchmarks/bench_graph_decode.py --models ${BENCH_MODELS:-100m,1b} --prompts ${BENCH_PROMPTS:-32,8} \
              ${DECODE_VARIANTS:+--variants $DECODE_VARIANTS} 2>&1 | tee "$OUT/decode.log"; save ;;
    attention) timeout $LIMIT $PY benchmarks/bench_decode_attention.py 2>&1 | tee "$OUT/attention.log"; save ;;
    packing) timeout $LIMIT $PY benchmarks/bench_packing.py --device cuda --models ${BENCH_MODELS:-100m,1b} 2>&1 | tee "$OUT/packing.log"; save ;;
    moe) timeout $LIMIT $PY benchmarks/bench_moe.py --device cuda 2>&1 | tee "$OUT/moe.log"; save ;;
    profile) timeout $LIMIT $PY benchmarks/profile_update.py --device cuda --preset ${BENCH_MODELS:-100m} --prompts ${BENCH_PROMPTS:-32} 2>&1 | tee "$OUT/profile_update.log" ;;
    trl) $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
           && { $PY -m pip show pyarrow fsspec huggingface_hub transformers accelerate 2>/dev/null | grep -E '^(Name|Version)'
                PYTHONPATH=$PWD:/tmp/site timeout $LIMIT $PY benchmarks/bench_trl_gpu.py 2>&1 | tee "$OUT/trl.log"; }; save ;;
    bench) timeout $LIMIT $PY benchmarks/bench_trainer.py --device cuda --gpu-model ${BENCH_MODELS:-100m,1b} --gpu-prompts ${BENCH_PROMPTS:-32,8} --gpu-profile "$OUT/profile.txt" --repeats ${BENCH_REPEATS:-4} \
             ${BENCH_COMPILE:---gpu-compile} 2>&1 | tee "$OUT/bench.log"; save ;;
    groups|refresh|threshold)
         timeout $LIMIT $PY paper_repro/trainer_at_scale.py --device cuda --workers ${SCALE_WORKERS:-16} --only $stage 2>&1 | tee "$OUT/scale_$stage.log"; save ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
echo "=== done $(date -u +%H:%M:%S)"
