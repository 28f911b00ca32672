"""The train-inference mismatch metrics of TRL 1.x and verl 0.9 get canonical names, and both trainers' files
(TRL trainer_state.json, verl's file-logger JSONL) are read with them."""

from __future__ import annotations

import json

import orjson
import pytest

from gspo_dynamics.logs import STANDARD_NAMES, canonical_name, read_log

TRL = {  # TRL trainer/grpo_trainer.py, with vLLM and vllm_importance_sampling_correction
    "sampling/importance_sampling_ratio/min": "is_ratio_min",
    "sampling/importance_sampling_ratio/mean": "is_ratio_mean",
    "sampling/importance_sampling_ratio/max": "is_ratio_max",
    "sampling/sampling_logp_difference/mean": "logp_diff_mean",
    "sampling/sampling_logp_difference/max": "logp_diff_max",
}
VERL = {  # verl utils/debug/metrics.py and trainer/ppo/rollout_corr_helper.py
    "training/rollout_probs_diff_mean": "prob_diff_mean",
    "training/rollout_probs_diff_max": "prob_diff_max",
    "training/rollout_probs_diff_std": "prob_diff_std",
    "rollout_corr/kl": "mismatch_kl",
    "rollout_corr/k3_kl": "mismatch_k3_kl",
    "rollout_corr/chi2_token": "mismatch_chi2_token",
    "rollout_corr/chi2_seq": "mismatch_chi2_seq",
    "rollout_corr/rollout_is_min": "is_ratio_min",
    "rollout_corr/rollout_is_mean": "is_ratio_mean",
    "rollout_corr/rollout_is_max": "is_ratio_max",
}


@pytest.mark.parametrize(("key", "name"), [*TRL.items(), *VERL.items()])
def test_each_key_has_its_canonical_name(key, name):
    assert canonical_name(key) == name and name in STANDARD_NAMES
    assert canonical_name("train/" + key) == name  # W&B / TensorBoard copies of TRL metrics


def test_a_trl_state_and_a_verl_jsonl_are_read_under_the_canonical_names(tmp_path):
    rows = [{"step": i, "reward": 0.5, **{k: 0.01 * i for k in TRL}} for i in range(1, 4)]
    trl = tmp_path / "trainer_state.json"
    trl.write_text(json.dumps({"log_history": rows}))
    log = read_log(trl)
    assert log["logp_diff_mean"].tolist() == pytest.approx([0.01, 0.02, 0.03])
    verl = tmp_path / "metrics.jsonl"
    verl.write_bytes(b"".join(orjson.dumps({"step": i, "data": {"critic/score/mean": 0.5, **{k: 0.1 * i for k in VERL}}})
                              + b"\n" for i in range(1, 4)))
    log = read_log(verl)
    assert log.trainer == "verl" and log["mismatch_k3_kl"].tolist() == pytest.approx([0.1, 0.2, 0.3])
