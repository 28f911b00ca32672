#!/usr/bin/env bash
# Quick start: set everything up, then run the toolkit's main jobs on bundled defaults and data:
# a prediction for a bandit configuration, a short simulation that checks a prediction, and a
# diagnosis of a real GRPO training log shipped in tests/data (its figure goes to out/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$(bash "$root/scripts/setup.sh")
bin=$(dirname "$py")

echo "== gspo-dynamics predict: SGD momentum 0.9, lr 2, beta 0.5, refresh interval 4 =="
"$bin/gspo-dynamics" predict --testbed bandit --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.9 --lr 2.0 --refresh-interval 4 --correction none
echo
echo "== gspo-dynamics simulate: momentum 0.5, lr 1, refresh interval 2, G = 16 x 4 groups, 64 seeds =="
"$bin/gspo-dynamics" simulate --testbed bandit --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.5 --lr 1.0 --refresh-interval 2 --correction none --group-size 16 --num-groups 4 \
    --steps 600 --seeds 64
echo
log="$root/tests/data/real_logs/srinath-manda__IITD_Feb26_AAIPL__outputs__checkpoint-500__trainer_state.json"
echo "== gspo-dynamics diagnose: a real TRL GRPO run (500 steps), figure in out/diagnose.png =="
mkdir -p "$root/out"
"$bin/gspo-dynamics" diagnose "$log" --plot "$root/out/diagnose.png"
