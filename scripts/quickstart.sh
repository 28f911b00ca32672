#!/usr/bin/env bash
# Quick start: set everything up, then a TRL user's path on data made here. The built-in trainer stands in for
# TRL: it writes the run as a TRL GRPOConfig (grpo_config.json) and logs in TRL's trainer_state.json. Then:
# what the config alone says, the forecast from the run's first 60 steps (a pilot) and, where the real logs of
# other people's runs sit beside the checkout (../shared/data/real_logs or $GSPO_DYNAMICS_REAL_LOGS; never shipped
# here), the forecast of a public Llama GRPO run from its first 60 steps; then the diagnosis of the finished run.
# The README shows these commands with their output (scripts/readme.py regenerates it; tests/test_readme.py).
# The bandit, where the theory is exact: examples/bandit.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$(bash "$root/scripts/setup.sh")
export PATH="$(dirname "$py"):$PATH"
cd "$root"
rm -rf out/quickstart

run() {  # the command as the README shows it, then its output
    echo "\$ $*"
    "$@"
    echo
}
echo "== 1. a GSPO run of the built-in trainer (100k-parameter model, 150 steps, 4 optimizer steps per rollout; ~10 s on a CPU)"
run gspo-dynamics train --task pattern --model 100k --objective gspo --steps 150 --steps-per-generation 4 \
    --lr 5e-4 --no-progress --out out/quickstart
echo "== 2. before the run: what its TRL config alone says"
run gspo-dynamics predict --config out/quickstart/grpo_config.json
echo "== 3. after a pilot: the forecast from the run's first 60 steps"
run gspo-dynamics predict --config out/quickstart/grpo_config.json --pilot out/quickstart/trainer_state.json \
    --pilot-steps 60

real_logs=${GSPO_DYNAMICS_REAL_LOGS:-../shared/data/real_logs}
llama="$real_logs/IMJONEZZ__UnslothGRPO__outputs__checkpoint-250__trainer_state.json"
if [ -f "$llama" ]; then
    echo "== 4. a real run: Llama-3.1-8B GRPO (IMJONEZZ/UnslothGRPO), its config and its first 60 of 250 steps"
    run gspo-dynamics predict --config examples/real_runs/unsloth_llama_grpo.json --pilot "$llama" --pilot-steps 60
else
    echo "(no real logs at $real_logs: the forecast of a real run is skipped)"
fi
echo "== 5. after the run: what went on, and what to change"
run gspo-dynamics diagnose out/quickstart/trainer_state.json --config out/quickstart/grpo_config.json \
    --reward-range 0 1
