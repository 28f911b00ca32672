"""The train-inference mismatch finding: the sampler's and the trainer's log-probs of the same tokens disagree
by enough that a completion's true importance weight leaves the clip band (`theory.mismatch`).

Rule. From the logged metrics, the per-token log-ratio spread s on each row (the first series present, in
SOURCES order: TRL's mean |log pi_train - log pi_sampler|, verl's k3 or k1 KL or token chi-square of
rollout_corr/*, verl's mean |pi_train - pi_sampler|, which bounds s from below as |dp| <= |e^delta - 1|);
s and the mean completion length L over the late window (the last quarter of the rows, as `_trend`).
Over L tokens the sequence log-weight S = sum_t delta_t ~ N(-L s^2/2, L s^2) (`theory.mismatch`), so the share
of completions whose weight exp(S) is outside [1 - eps_low, 1 + eps_high] is

    share = Phi((log(1 - eps_low) + L s^2/2) / (s sqrt L)) + Phi((-L s^2/2 - log(1 + eps_high)) / (s sqrt L)).

share >= MISMATCH_SHARE: most completions are off-policy by more than the clip tolerates. Severity "warning": with no
correction logged (no is_ratio_*) the run trains on them as if on-policy, a bias whose size the share does not give
(it treats the tokens' log-ratios as independent, and real runs train on through a steady mismatch: audit s38's verl
run rose for 200 steps at k3 4e-4 and 146 tokens, a share of 54%, its k3 highest while it rose), so it is no reason
to distrust the run's numbers; with a correction logged, the share says what the correction must do. (A swamped
correction, most weights past the cap IS_CAP, cannot be read here: under the model the weight's log-mean is
-L s^2/2 < 0, so at most half the weights pass any cap above 1.)
Half the completions leave the band from L* = (log(1 + eps_high) / (Z_HALF s))^2 tokens on.

A TRL log with only `sampling/importance_sampling_ratio/*` (no log-prob difference) gives s through the mean of
the corrected weights under TRL's default mode (vllm_importance_sampling_mode sequence_mask, clip_max C = 3,
masked weights set to 0): with S ~ N(-sigma^2/2, sigma^2), sigma = s sqrt(L),

    m = E[e^S 1{e^S <= C}] = Phi((log C - sigma^2/2) / sigma),

decreasing in sigma, solved for sigma (`spread_from_masked_mean`) at the late rows' mean of m plus Z_BOUND standard
errors (the batch mean scatters around 1 where sigma ~ 0: a lower bound on sigma), then s = sigma / sqrt(L).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.diagnose._finding import Finding
from gspo_dynamics.diagnose._trend_stats import mean_se, window
from gspo_dynamics.diagnose._verdict import evidence
from gspo_dynamics.logs import RunLog
from gspo_dynamics.theory import mismatch as th

MISMATCH_SHARE = 0.5  # most completions' true weight outside the clip band: the run is off-policy, not on
Z_HALF = 0.6745  # P(|X| > 0.6745 sd) = 1/2 for a normal X: L* is where half the completions leave the band
DEFAULT_BAND = (0.2, 0.2)  # TRL epsilon and verl clip_ratio_low / clip_ratio_high defaults
IS_CAP = 2.0  # the truncation cap advised: verl's rollout_is_threshold default, and a weight at most doubled
MIN_ROWS = 3  # rows with a mismatch metric needed to read it
TRL_MASK_CAP = 3.0  # TRL vllm_importance_sampling_clip_max default (vllm_importance_sampling_mode sequence_mask)
Z_BOUND = 2.0  # the mean weight's one-sided upper bound, in standard errors of the late rows' mean
SIGMA_MAX = 50.0  # the root search's upper end: m(50) = Phi(-25), below any logged mean
# (canonical name, how it gives s, what the user logged), in order of preference
SOURCES = (
    ("logp_diff_mean", th.spread_from_mean_abs, "mean |log-prob difference| (TRL sampling/sampling_logp_difference/mean)"),
    ("mismatch_k3_kl", lambda x: th.spread_from_kl(np.maximum(x, 0.0)), "k3 KL sampler-trainer (verl rollout_corr/k3_kl)"),
    ("mismatch_kl", lambda x: th.spread_from_kl(np.maximum(x, 0.0)), "KL sampler-trainer (verl rollout_corr/kl)"),
    ("mismatch_chi2_token", lambda x: th.spread_from_chi2(np.maximum(x, 0.0)),
     "token chi-square (verl rollout_corr/chi2_token)"),
    ("prob_diff_mean", th.spread_from_mean_abs,
     "mean |probability difference| (verl training/rollout_probs_diff_mean; a lower bound on s)"),
    ("is_ratio_mean", None, "mean corrected importance weight (TRL sampling/importance_sampling_ratio/mean, read "
     "under its default sequence_mask at 3)"),
)


def spread_from_masked_mean(mean, cap: float = TRL_MASK_CAP) -> np.ndarray:
    """sigma (the sequence log-weight's sd) from the mean masked weight m = Phi((log C - sigma^2/2) / sigma)
    (module docstring); m >= 1 (or not finite) gives 0, m <= 0 gives SIGMA_MAX."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    a = math.log(cap)
    m = np.asarray(mean, dtype=float)
    out = np.zeros_like(m)
    for i, x in np.ndenumerate(m):
        if not np.isfinite(x) or x >= norm.cdf(a / 1e-6):  # m(sigma -> 0) = 1
            continue
        if x <= norm.cdf((a - SIGMA_MAX**2 / 2) / SIGMA_MAX):
            out[i] = SIGMA_MAX
            continue
        out[i] = brentq(lambda sd: norm.cdf((a - sd * sd / 2) / sd) - x, 1e-6, SIGMA_MAX, xtol=1e-10)
    return out


def _spread(log: RunLog):
    """(steps, s per row, the source's name and text) from the first SOURCES series with MIN_ROWS rows, or None
    (the masked mean needs each row's mean length: sigma / sqrt(L))."""
    for name, to_spread, text in SOURCES:
        if log.n_points(name) < MIN_ROWS:
            continue
        if to_spread is not None:
            steps, x = log.valid(name)
            return steps, to_spread(np.clip(x, 0.0, None)), name, text
        if "mean_length" not in log:
            return None
        x, length = log[name], log["mean_length"]  # (n,) each, on the log's rows
        keep = np.isfinite(x) & np.isfinite(length) & (length >= 1)
        if keep.sum() < MIN_ROWS:
            return None
        steps, m, length = log.steps[keep], x[keep], length[keep]
        late = window(m, True)
        mean, se = mean_se(m[late])
        # a batch's mean weight scatters around 1 even at sigma ~ 0, and m is flat near 1 (m(0.5) = 0.998): only
        # its upper bound mean + Z_BOUND se is inverted, a lower bound on sigma as the probability gap gives
        sigma = float(spread_from_masked_mean(min(mean + Z_BOUND * (se if math.isfinite(se) else 0.0), 1.0)))
        return steps, np.full(steps.size, sigma / math.sqrt(float(np.mean(length[late])))), name, text
    return None


def _late_mean(log: RunLog, name: str) -> float | None:
    if log.n_points(name) < MIN_ROWS:
        return None
    x = log.valid(name)[1]
    return float(np.mean(x[window(x, True)]))


def _band(hparams) -> tuple[float, float]:
    """The PPO clip band of the run (GSPO's sequence band is a different quantity: the defaults then)."""
    if hparams is None or hparams.correction == "sequence":
        return DEFAULT_BAND
    return hparams.clip_low, hparams.clip_high


def mismatch_numbers(log: RunLog, hparams=None) -> dict | None:
    """The module rule's numbers, or None when the log has no mismatch metric or no mean length:
    {"s", "source", "steps", "length", "share", "leave_length", "token_cap_share", "sequence_cap_share",
     "gspo_log_sd", "band", "corrected"}."""
    read = _spread(log)
    length = _late_mean(log, "mean_length")
    if read is None or length is None or length < 1:
        return None
    steps, s_rows, name, text = read
    late = window(s_rows, True)
    s = float(np.median(s_rows[late]))
    lo, hi = _band(hparams)
    mean, var = th.sequence_log_ratio_moments(s, length)
    tok_mean, tok_var = th.sequence_log_ratio_moments(s, 1.0)
    return {
        "s": s, "source": text, "name": name, "steps": (int(steps[late][0]), int(steps[late][-1])), "length": length,
        "share": float(th.outside_band_share(mean, var, lo, hi)),
        "leave_length": float(th.leave_length(s, hi, Z_HALF)),
        "token_cap_share": float(th.above_cap_share(tok_mean, tok_var, IS_CAP)),
        "sequence_cap_share": float(th.above_cap_share(mean, var, IS_CAP)),
        "gspo_log_sd": s / math.sqrt(length), "band": (lo, hi), "corrected": log.n_points("is_ratio_mean") > 0,
    }


def _is_max(log: RunLog) -> tuple[float, int] | None:
    if log.n_points("is_ratio_max") == 0:
        return None
    steps, x = log.valid("is_ratio_max")
    i = int(np.argmax(x))
    return float(x[i]), int(steps[i])


def train_inference_mismatch(log: RunLog, hparams=None) -> Finding | None:
    """The module rule: a finding when share >= MISMATCH_SHARE."""
    n = mismatch_numbers(log, hparams)
    if n is None or n["share"] < MISMATCH_SHARE:
        return None
    lo, hi = n["band"]
    band = f"[{1 - lo:.2g}, {1 + hi:.3g}]"
    peak = _is_max(log)
    seen = f"; logged importance ratio max {peak[0]:.3g} at step {peak[1]}" if peak else ""
    summary = (f"the sampler's and the trainer's log-probs disagree (per-token log-ratio spread {n['s']:.2g}){seen}: "
               f"at the run's {n['length']:.0f} tokens the true sequence weight leaves {band} for {n['share']:.0%} of "
               f"completions (half from {n['leave_length']:.0f} tokens on); with token-level truncation at "
               f"{IS_CAP:g} on the next run, {_percent(n['token_cap_share'])} of tokens hit the cap "
               f"(a sequence-level cap of {IS_CAP:g} would act on {n['sequence_cap_share']:.0%} of completions)")
    ev = [evidence(f"per-token log-ratio spread s, from {n['source']}", n["s"], n["steps"]),
          evidence("share of completions whose weight exp(sum of log-ratios) is outside the clip band", n["share"],
                   n["steps"], threshold=MISMATCH_SHARE, mean_length=n["length"], band=[1 - lo, 1 + hi],
                   half_out_from_length=n["leave_length"])]
    if peak:
        ev.append(evidence("logged importance ratio max", peak[0], (peak[1], peak[1])))
    return Finding("train_inference_mismatch", "warning", summary, ev, _advice(n))


def _percent(share: float) -> str:
    return "under 0.01%" if share < 1e-4 else f"{share:.2%}"


def _advice(n: dict) -> list[str]:
    cap = f"{IS_CAP:g}"
    advice = [f"token-level truncated importance sampling at {cap}: TRL vllm_importance_sampling_correction: true, "
              f"vllm_importance_sampling_mode: token_truncate, vllm_importance_sampling_clip_max: {cap} / verl "
              f"algorithm.rollout_correction.rollout_is: token, algorithm.rollout_correction.rollout_is_threshold: {cap}"]
    if n["sequence_cap_share"] > 0.1:
        advice.append(f"not a sequence-level weight at this length: it passes {cap} on {n['sequence_cap_share']:.0%} of "
                      "completions, which a mask drops and a truncation flattens (TRL's default vllm_importance_sampling_"
                      "mode: sequence_mask; verl algorithm.rollout_correction.rollout_is: sequence)")
    else:
        advice.append(f"a sequence-level weight also holds at this length (it passes {cap} on "
                      f"{n['sequence_cap_share']:.1%} of completions): TRL vllm_importance_sampling_mode: "
                      "sequence_truncate / verl algorithm.rollout_correction.rollout_is: sequence")
    advice.append(f"or GSPO's length-normalised ratio, whose mismatch log-spread is s / sqrt(L) = {n['gspo_log_sd']:.2g}: "
                  "TRL importance_sampling_level: sequence / verl actor_rollout_ref.actor.policy_loss.loss_mode: gspo")
    return advice
