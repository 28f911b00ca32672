"""The registry against TRL 1.16's own `GRPOTrainer._compute_loss` (`_trl_reference`): on the same batch the
losses TRL also has give TRL's loss, and their entry shares (`losses/entry_clip_*`), under the keys our
trainer logs them with (`train._metrics.clip_metrics`), are TRL's clip_ratio/* and cispo_clip_ratio.
The losses' own clip_frac_* count what the loss weighs, which is not what TRL counts for grpo."""

from __future__ import annotations

import pytest
import torch
from _loss_cases import clips, make_inputs, shapes
from _trl_reference import TRL_TWINS, trl_compute_loss
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics.objectives import LOSSES, SEQUENCE_LEVEL, get_loss
from gspo_dynamics.train._metrics import clip_metrics

# TRL casts the clip indicators to float32 (`.float()`) before its means: its shares carry float32
# rounding (6e-8 relative); 1e-6 is far above that and far below one clipped entry in a batch (1/(B L))
TRL_TOL = 1e-6
# the losses stay float64 in both: the same sums in another order (TRL multiplies by the mask, we select)
LOSS_TOL = 1e-12
CLIP_KEYS = ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean")


def _ours(name, logp, logp_old, adv, mask, eps_low, eps_high):
    extra = {"max_tokens": logp.shape[1]} if name == "dr_grpo" else {}
    loss, m = get_loss(name)(logp, logp_old, adv, mask, clip_low=eps_low, clip_high=eps_high, **extra)
    return loss, clip_metrics(m, name)


@pytest.mark.parametrize("name", list(TRL_TWINS))
@settings(max_examples=30, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.05, 0.3, 1.5]))
def test_the_keys_we_log_under_trls_names_are_trls_values(name, shape, clip, spread):
    """Empty completions included, except at L = 1: there TRL's `global_masked_mean` takes the (B, 1) token
    tensor for a per-sequence one and counts masked entries (completions are never empty: EOS counts)."""
    seed, B, L = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread, pad=L > 1)
    eps_low, eps_high = (1.0, clip[1]) if name == "cispo" else clip  # CISPO: no lower bound (TRL has none)
    loss, ours = _ours(name, logp, logp_old, adv, mask, eps_low, eps_high)
    loss_type, level = TRL_TWINS[name]
    trl_loss, trl = trl_compute_loss(loss_type=loss_type, level=level, logps=logp, old=logp_old, advantages=adv,
                                     completion_mask=mask, eps_low=eps_low,
                                     eps_high=1.0 + eps_high if name == "cispo" else eps_high,  # TRL's absolute cap
                                     max_completion_length=L)
    keys = ("cispo_clip_ratio",) if name == "cispo" else CLIP_KEYS
    assert set(keys) <= set(ours) and set(keys) <= set(trl)
    for key in keys:
        assert float(ours[key]) == pytest.approx(trl[key], abs=TRL_TOL), key
    if name not in SEQUENCE_LEVEL or bool(mask.any(-1).all()):  # TRL masks an empty sequence's GSPO term away
        assert float(loss.detach()) == pytest.approx(float(trl_loss.detach()), abs=LOSS_TOL, rel=LOSS_TOL)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, clip=clips, spread=st.sampled_from([0.05, 0.3, 1.5]))
def test_gspo_token_counts_every_token_of_its_sequence_ratio(shape, clip, spread):
    """GSPO-token clips s_i at every token; TRL's token-level count of that ratio is TRL's grpo run on log-probs
    whose every token log-ratio is the sequence's mean."""
    seed, B, L = shape
    logp, logp_old, adv, mask = make_inputs(seed, B, L, spread, pad=L > 1)  # L = 1: see the test above
    _, ours = _ours("gspo_token", logp, logp_old, adv, mask, *clip)
    log_ratio = torch.where(mask, logp.detach() - logp_old, 0.0)
    log_s = log_ratio.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp_min(1)  # (B, 1)
    _, trl = trl_compute_loss(loss_type="grpo", level="token", logps=logp_old + log_s.expand(B, L), old=logp_old,
                              advantages=adv, completion_mask=mask, eps_low=clip[0], eps_high=clip[1])
    for key in CLIP_KEYS:
        assert float(ours[key]) == pytest.approx(trl[key], abs=TRL_TOL), key


def test_pg_clips_nothing_so_logs_no_clip_key():
    logp, logp_old, adv, mask = make_inputs(0, 4, 3, spread=1.0)
    _, ours = _ours("pg", logp, logp_old, adv, mask, 0.2, 0.2)
    assert not {*CLIP_KEYS, "cispo_clip_ratio"} & set(ours)
    assert not any(key.startswith("losses/entry_clip") for key in ours)


def test_every_entry_is_checked_against_trl_or_has_no_twin():
    assert set(TRL_TWINS) | {"gspo_token", "pg"} == set(LOSSES)
    assert set(SEQUENCE_LEVEL) == {name for name, (_, level) in TRL_TWINS.items() if level == "sequence"}


def test_grpo_clip_ratio_counts_tokens_where_its_own_fraction_counts_sequences():
    """The review's case: sequences of 1 and 3 tokens, only the short one clipped (its ratio above 1 + eps_high,
    A > 0). GRPO weighs each sequence alike, so 1/2 of its weight is clipped (losses/clip_frac); TRL counts 1 of
    the 4 tokens (clip_ratio/region_mean)."""
    logp_old = torch.zeros(2, 3, dtype=torch.float64)
    logp = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, False, False], [True, True, True]])
    adv = torch.tensor([1.0, 1.0], dtype=torch.float64)
    loss, ours = _ours("grpo", logp, logp_old, adv, mask, 0.2, 0.2)
    _, trl = trl_compute_loss(loss_type="grpo", level="token", logps=logp, old=logp_old, advantages=adv,
                              completion_mask=mask, eps_low=0.2, eps_high=0.2)
    assert float(ours["losses/clip_frac"]) == 0.5
    assert float(ours["clip_ratio/region_mean"]) == trl["clip_ratio/region_mean"] == 0.25
