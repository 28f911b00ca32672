#!/usr/bin/env bash
# The two-armed softmax bandit, where the model is exact (docs/theory.md): its prediction from the
# hyperparameters alone, then a torch simulation of the same setting beside the prediction.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$(bash "$root/scripts/setup.sh")
bin=$(dirname "$py")
echo "== predict: SGD momentum 0.9, lr 2, KL weight 0.5, refresh interval 4 (unstable: the critical T is 3) =="
"$bin/gspo-dynamics" predict --testbed bandit --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.9 --lr 2.0 --refresh-interval 4 --correction none
echo
echo "== simulate: momentum 0.5, lr 1, refresh interval 2, G = 16 x 4 groups, 64 seeds =="
"$bin/gspo-dynamics" simulate --testbed bandit --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.5 --lr 1.0 --refresh-interval 2 --correction none --group-size 16 --num-groups 4 \
    --steps 600 --seeds 64
