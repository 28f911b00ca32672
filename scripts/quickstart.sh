#!/usr/bin/env bash
# Quick start: set everything up, then run the toolkit's main job on bundled defaults:
# a prediction for a bandit configuration and a short simulation that checks it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$(bash "$root/scripts/setup.sh")
bin=$(dirname "$py")

echo "== gspo-dynamics predict (SGD, momentum 0.9, lr 2, beta 0.5, refresh interval 2) =="
"$bin/gspo-dynamics" predict --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.9 --lr 2.0 --refresh-interval 2 --correction none
echo
echo "== gspo-dynamics simulate (the same configuration at G = 8, 64 seeds) =="
"$bin/gspo-dynamics" simulate --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.9 --lr 2.0 --refresh-interval 2 --correction none --group-size 8 --steps 600 --seeds 64
