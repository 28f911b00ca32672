#!/usr/bin/env bash
# Quick start: set everything up, then run the toolkit's main jobs on bundled defaults and data:
# a prediction for a TRL config (examples/) and for a bandit configuration, a short simulation that
# checks a prediction, a short GRPO/GSPO run of the built-in trainer, the forecast from its config
# and its first 60 steps (a pilot), the same with three finished runs of the task as a prior, and the
# diagnosis of its log (figures in out/), and, only
# where the real logs of other people's runs sit beside the checkout (../shared/data/real_logs or
# $GSPO_DYNAMICS_REAL_LOGS; never shipped here), the diagnosis of one of them too.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=$(bash "$root/scripts/setup.sh")
bin=$(dirname "$py")

echo "== gspo-dynamics predict: what a TRL GRPOConfig alone says (examples/trl_grpo_config.yaml) =="
"$bin/gspo-dynamics" predict --config "$root/examples/trl_grpo_config.yaml"
echo
echo "== gspo-dynamics predict --testbed bandit: SGD momentum 0.9, lr 2, beta 0.5, refresh interval 4 =="
"$bin/gspo-dynamics" predict --testbed bandit --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.9 --lr 2.0 --refresh-interval 4 --correction none
echo
echo "== gspo-dynamics simulate: momentum 0.5, lr 1, refresh interval 2, G = 16 x 4 groups, 64 seeds =="
"$bin/gspo-dynamics" simulate --testbed bandit --kl 0.5 --ref-logit -1.0 --advantage mean --optimizer sgd \
    --momentum 0.5 --lr 1.0 --refresh-interval 2 --correction none --group-size 16 --num-groups 4 \
    --steps 600 --seeds 64
echo
echo
echo "== gspo-dynamics train: GSPO on the pattern task, 100k-parameter transformer, 150 steps (CPU) =="
mkdir -p "$root/out"
rm -rf "$root/out/quickstart_run"
"$bin/gspo-dynamics" train --task pattern --model 100k --objective gspo --steps 150 --no-progress \
    --out "$root/out/quickstart_run"
echo
echo "== gspo-dynamics predict: that run's config and its first 60 steps as a pilot, map in out/predict_map.png =="
"$bin/gspo-dynamics" predict --config "$root/out/quickstart_run/config.json" \
    --pilot "$root/out/quickstart_run/trainer_state.json" --pilot-steps 60 --plot "$root/out/predict_map.png"
echo
echo "== gspo-dynamics predict --prior: the same pilot, and three finished runs of the task (other lr and seeds) as the level's prior =="
for spec in "0.0005 1" "0.002 2" "0.001 3"; do
    set -- $spec
    rm -rf "$root/out/prior_$2"
    "$bin/gspo-dynamics" train --task pattern --model 100k --objective gspo --steps 150 --lr "$1" --seed "$2" --no-progress \
        --out "$root/out/prior_$2" > /dev/null
done
"$bin/gspo-dynamics" predict --config "$root/out/quickstart_run/config.json" \
    --pilot "$root/out/quickstart_run/trainer_state.json" --pilot-steps 60 \
    --prior "$root"/out/prior_{1,2,3}/trainer_state.json
echo
echo "== gspo-dynamics diagnose: that run's TRL-style log, figure in out/diagnose.png =="
"$bin/gspo-dynamics" diagnose "$root/out/quickstart_run/trainer_state.json" --plot "$root/out/diagnose.png"

real_logs=${GSPO_DYNAMICS_REAL_LOGS:-$root/../shared/data/real_logs}
real="$real_logs/srinath-manda__IITD_Feb26_AAIPL__outputs__checkpoint-500__trainer_state.json"
echo
if [ -f "$real" ]; then
    echo "== gspo-dynamics diagnose: a real TRL GRPO run (srinath-manda/IITD_Feb26_AAIPL, 500 steps), figure in out/diagnose_real.png =="
    "$bin/gspo-dynamics" diagnose "$real" --plot "$root/out/diagnose_real.png"
else
    echo "(no real logs beside the checkout at $real_logs: the diagnosis of a real run is skipped)"
fi
