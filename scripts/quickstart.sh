#!/usr/bin/env bash
# Quick start: set everything up, then run the toolkit's main job on bundled defaults:
# a prediction for a bandit configuration and a short simulation that checks a prediction.
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
