#!/usr/bin/env bash
# Set up (with the test tools) and run the test suite.
#   bash scripts/test.sh           default suite (about 4 min, 7.5 CPU-minutes, on 2 cores; slow validations excluded)
#   bash scripts/test.sh --full    everything, including tests marked slow
# Further arguments go to pytest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$(bash "$root/scripts/setup.sh" dev,fast,kernels,frameworks)  # fast: numba, so the compiled bandit engine is tested too;
# frameworks: TRL, transformers, TensorBoard and verl (no deps), so the config mapping and the callback meet the real libraries;
# kernels: triton, so the decode step's Triton kernel runs (on a CPU through its interpreter, tests/conftest.py)
marker=(-m "not slow")
# one worker per core (pytest-xdist), each test file on one worker; GSPO_DYNAMICS_TEST_WORKERS=0 runs in one process
workers=(-n "${GSPO_DYNAMICS_TEST_WORKERS:-auto}" --dist loadfile)
if [ "${1:-}" = "--full" ]; then
    marker=()
    shift
fi
cd "$root"
exec "$py" -m pytest "${workers[@]}" "${marker[@]}" "$@"
