"""The tabular ratio measurement and its predictions (paper_repro/ratio_statistics.py's claims; the setup in its
docstring). A `TabularPolicy` pi_s on `PatternMatch(length=L, partial_credit=True)` is trained by SGD on the
`grpo` loss with a fresh pi_s minibatch of N = GROUPS x GROUP_SIZE responses per step; at window position j the
token log-ratios log w_t and GSPO's log s = mean_t log w_t are read on a fresh pi_s sample (`tabular_ratio_run`),
and the first step's logit change -lr grad gives the measured drifts (`first_step_drift`): d = rms_t std_pi(mean
step), n = rms_t std_pi(scatter between minibatches).

Predicted from the hyperparameters alone: the per-position drifts (`predicted_drifts`),

    n_t = `tabular_noise_drift`(lr, pi_t, N, L, E[A^2]),
    d_t = lr / L |E[A | match_t] - E[A | no match_t]| std_pi(p_t (e_target - pi_t)),

the memoryless lognormal statistics sigma^2(j) = j^2 mean_t d_t^2 + j mean_t n_t^2 with GRPO's and GSPO's clip
ranges (`lognormal_ratio_prediction`), and the clip-aware walk (`walk_ratio_prediction`, `theory.ratio_drift`)
from the advantage's signed moments given each token (`signed_advantage`, Monte Carlo of the group-std
advantages from the exact reward law).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gspo_dynamics.objectives import get_loss, group_advantages
from gspo_dynamics.sim.sequence import PatternMatch, TabularPolicy, count_distribution, log_probs, sample
from gspo_dynamics.theory.ratio_drift import SignedAdvantage, clipped_log_ratio_law
from gspo_dynamics.theory.ratios import GRPO_CLIP, GSPO_CLIP, clip_fractions, ratio_statistics, tabular_noise_drift

GROUP_SIZE = 8  # G, responses per prompt
GROUPS = 8  # prompts per minibatch: N = 64 sequences per SGD step
LOG_TOKEN_BOUNDS = (math.log(1 - GRPO_CLIP[0]), math.log(1 + GRPO_CLIP[1]))
LOG_SEQUENCE_BOUNDS = (math.log(1 - GSPO_CLIP[0]), math.log(1 + GSPO_CLIP[1]))
MC_GROUPS = 20_000  # Monte Carlo groups for E[A^2] in the prediction
MC_GAP = 4_000  # Monte Carlo groups per position for E[A | match] - E[A | no match]
MC_SIGNED = 4_000  # Monte Carlo groups per position for the signed moments of A given match / no match


def centred_var(x: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Var_{y ~ pi}[x(y)] along the vocabulary axis: sum pi x^2 - (sum pi x)^2."""
    mean = (probs * x).sum(-1)
    return (probs * x**2).sum(-1) - mean**2


def advantages_np(rewards: np.ndarray) -> np.ndarray:
    """The package's group-std advantages of (M, G) numpy rewards."""
    return group_advantages(torch.from_numpy(rewards), scale="group").numpy()


def predicted_drifts(probs: np.ndarray, target: np.ndarray, lr: float, rng: np.random.Generator):
    """(d_t, n_t, E[A^2]) per position from the hyperparameters (module docstring). probs: (L, V)."""
    L, V = probs.shape
    p = probs[np.arange(L), target]  # (L,) match probability per position
    law = count_distribution(torch.from_numpy(p)).numpy()  # (L + 1,) law of the match count
    counts = rng.choice(L + 1, size=(MC_GROUPS, GROUP_SIZE), p=law / law.sum())  # (M, G)
    a2 = float((advantages_np(counts / L) ** 2).mean())
    noise = tabular_noise_drift(lr, probs, GROUPS * GROUP_SIZE, L, a2)  # (L,)

    # E[A | match_t] - E[A | no match_t] for member 0: the others are drawn from the full law,
    # member 0's count without position t from the law of the other L - 1 positions; the same
    # draws with and without the match (common random numbers) cancel most Monte Carlo noise.
    others = np.stack([np.delete(p, t) for t in range(L)]) if L > 1 else np.zeros((1, 0))
    law_rest = count_distribution(torch.from_numpy(others)).numpy()  # (L, L)
    u = rng.random(MC_GAP)
    rest = np.stack([np.searchsorted(np.cumsum(law_rest[t]), u * law_rest[t].sum()) for t in range(L)])  # (L, M')
    mates = np.broadcast_to(counts[:MC_GAP, 1:], (L, MC_GAP, GROUP_SIZE - 1))  # (L, M', G - 1)
    hit = np.concatenate([(rest + 1)[..., None], mates], -1).reshape(-1, GROUP_SIZE) / L  # (L M', G)
    miss = np.concatenate([rest[..., None], mates], -1).reshape(-1, GROUP_SIZE) / L
    gap = (advantages_np(hit)[:, 0] - advantages_np(miss)[:, 0]).reshape(L, MC_GAP).mean(1)  # (L,)
    step = p[:, None] * (np.eye(V)[target] - probs)  # (L, V) p_t (e_target - pi_t)
    coherent = lr / L * np.abs(gap) * np.sqrt(centred_var(step, probs))  # (L,)
    return coherent, noise, a2


def _member_advantages(p: np.ndarray, rng: np.random.Generator, draws: int,
                       group_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Group-std advantage of member 0 given that position t matches / does not match: (L, draws)
    each, the same groups with and without the match (common random numbers). p: (L,) match probs."""
    L = p.size
    law = count_distribution(torch.from_numpy(p)).numpy()  # (L + 1,)
    mates = rng.choice(L + 1, size=(draws, group_size - 1), p=law / law.sum())  # (M, G - 1) other members' counts
    others = np.stack([np.delete(p, t) for t in range(L)]) if L > 1 else np.zeros((1, 0))
    law_rest = count_distribution(torch.from_numpy(others)).numpy()  # (L, L): member 0's count without t
    u = rng.random(draws)
    rest = np.stack([np.searchsorted(np.cumsum(law_rest[t]), u * law_rest[t].sum()) for t in range(L)])  # (L, M)
    mates = np.broadcast_to(mates, (L, draws, group_size - 1))
    hit = np.concatenate([(rest + 1)[..., None], mates], -1).reshape(-1, group_size) / L  # (L M, G)
    miss = np.concatenate([rest[..., None], mates], -1).reshape(-1, group_size) / L
    return advantages_np(hit)[:, 0].reshape(L, draws), advantages_np(miss)[:, 0].reshape(L, draws)


def _uniform_member_advantages(L: int, V: int, rng: np.random.Generator, draws: int,
                               group_size: int) -> tuple[np.ndarray, np.ndarray]:
    """`_member_advantages` for the uniform policy, (draws,) each: every position matches with p = 1/V, so one
    Monte Carlo serves all; member 0's count is 1{match at t} + Binomial(L - 1, p), the other G - 1 members'
    Binomial(L, p)."""
    p = 1.0 / V
    rest = rng.binomial(L - 1, p, draws)  # (M,) member 0 without position t
    mates = rng.binomial(L, p, (draws, group_size - 1))  # (M, G - 1)

    def member0(count):  # group-std advantage of member 0, (M,)
        return advantages_np(np.concatenate([count[:, None], mates], 1) / L)[:, 0]  # rewards (M, G)

    return member0(rest + 1), member0(rest)


def signed_advantage(probs: np.ndarray, target: np.ndarray, rng: np.random.Generator, *,
                     group_size: int = GROUP_SIZE, draws: int = MC_SIGNED):
    """Signed moments of the group-std advantage A of a response given its token y at each position,
    (`SignedAdvantage` (L, V), P(A > 0 | y) (L, V), P(A < 0 | y) (L, V)): the target token's from
    'position t matches', every other token's from 'does not match' (the reward, matches / L, sees only
    matches), each from `draws` Monte Carlo groups of `group_size` (common random numbers with and without
    the match). probs: (L, V) pi_s; target: (L,). A uniform pi_s (every entry equal, the figures' start)
    draws one Monte Carlo for all positions (`_uniform_member_advantages`)."""
    L, V = probs.shape
    is_target = np.arange(V)[None, :] == target[:, None]  # (L, V)
    if np.all(probs == probs.flat[0]):
        hit, miss = _uniform_member_advantages(L, V, rng, draws, group_size)  # (M,) each
        moments = [(np.maximum(a, 0).mean(), np.minimum(a, 0).mean(), (np.maximum(a, 0) ** 2).mean(),
                    (np.minimum(a, 0) ** 2).mean()) for a in (hit, miss)]
        signs = [np.where(is_target, (hit > 0).mean(), (miss > 0).mean()),
                 np.where(is_target, (hit < 0).mean(), (miss < 0).mean())]
        return SignedAdvantage(*[np.where(is_target, h, m) for h, m in zip(*moments)]), *signs
    a_hit, a_miss = _member_advantages(probs[np.arange(L), target], rng, draws, group_size)  # (L, M) each
    samples = np.where(is_target[..., None], a_hit[:, None, :], a_miss[:, None, :])  # (L, V, M)
    return SignedAdvantage.from_samples(samples), (samples > 0).mean(-1), (samples < 0).mean(-1)


def grpo_step(policy: TabularPolicy, policy_s: TabularPolicy, task: PatternMatch, clip: tuple[float, float],
              gen: torch.Generator) -> torch.Tensor:
    """The `grpo` loss of one fresh pi_s minibatch (B = GROUPS prompts x G responses), for backward."""
    prompts = task.prompts(GROUPS * GROUP_SIZE)
    tokens, logp_s, mask, _ = sample(policy_s, prompts, task.length, gen)  # (N, L) from the sampling policy
    adv = group_advantages(task.reward(prompts, tokens, mask).view(GROUPS, GROUP_SIZE)).flatten()  # (N,)
    loss, _ = get_loss("grpo")(log_probs(policy, prompts, tokens, mask), logp_s, adv, mask,
                               clip_low=clip[0], clip_high=clip[1])
    return loss


def first_step_drift(policy_s: TabularPolicy, task: PatternMatch, lr: float, batches: int,
                     gen: torch.Generator) -> tuple[float, float]:
    """(d, n) measured: rms over positions of the centred std under pi_s of the mean first-step
    logit change -lr grad (coherent) and of its scatter between minibatches (noise)."""
    policy = TabularPolicy(task.length, policy_s.vocab_size, policy_s.logits.detach())
    steps = []
    for _ in range(batches):
        policy.zero_grad()
        grpo_step(policy, policy_s, task, GRPO_CLIP, gen).backward()
        steps.append(-lr * policy.logits.grad.numpy().copy())
    steps = np.stack(steps)  # (K, L, V)
    probs = policy_s.probs().numpy()
    noise2 = centred_var(steps - steps.mean(0), probs).mean(0) * batches / (batches - 1)  # (L,)
    coherent2 = np.maximum(centred_var(steps.mean(0), probs) - noise2 / batches, 0.0)  # d^2, less the noise of the mean
    return math.sqrt(coherent2.mean()), math.sqrt(noise2.mean())


def tabular_ratio_run(policy_s: TabularPolicy, task: PatternMatch, lr: float, clip: tuple[float, float], window,
            eval_sequences: int, gen: torch.Generator) -> dict[int, dict[str, float]]:
    """Train a copy of pi_s for max(window) SGD steps of the `grpo` loss with clip range `clip` on
    fresh pi_s minibatches; at every j in window, the ratio statistics on one fresh pi_s sample."""
    L = task.length
    policy = TabularPolicy(L, policy_s.vocab_size, policy_s.logits.detach())
    opt = torch.optim.SGD(policy.parameters(), lr=lr)
    # Evaluation sample from pi_s, drawn straight from the table (the law `sample` draws from):
    # positions are independent, so log w of every (sequence, position) is a table lookup.
    probs_s = policy_s.probs().detach()  # (L, V)
    tokens_e = torch.multinomial(probs_s, eval_sequences, replacement=True, generator=gen)  # (L, M)
    rows = torch.arange(L)[:, None]  # (L, 1)
    # Its rewards and advantages, for the clip fractions as the losses log them (sign-aware).
    mask_e = torch.ones(eval_sequences, L, dtype=torch.bool)
    prompts_e = task.prompts(eval_sequences)
    rewards_e = task.reward(prompts_e, tokens_e.T, mask_e).view(-1, GROUP_SIZE)  # (M / G, G)
    adv_e = group_advantages(rewards_e).flatten()  # (M,)
    logp_s_e = torch.log_softmax(policy_s.logits, -1)[rows, tokens_e].T  # (M, L)
    out = {}
    for k in range(1, max(window) + 1):
        opt.zero_grad()
        grpo_step(policy, policy_s, task, clip, gen).backward()
        opt.step()
        if k not in window:
            continue
        with torch.no_grad():
            logp_e = torch.log_softmax(policy.logits, -1)[rows, tokens_e].T  # (M, L)
            log_w = logp_e - logp_s_e  # (M, L) token log-ratios
            log_s = log_w.mean(1)  # (M,) GSPO's sequence log-ratio
            out[k] = dict(
                tok_var=float(log_w.var()), seq_var=float(log_s.var()),
                tok_below=float((log_w < LOG_TOKEN_BOUNDS[0]).double().mean()),
                tok_above=float((log_w > LOG_TOKEN_BOUNDS[1]).double().mean()),
                seq_below=float((log_s < LOG_SEQUENCE_BOUNDS[0]).double().mean()),
                seq_above=float((log_s > LOG_SEQUENCE_BOUNDS[1]).double().mean()),
                pos_share=float((adv_e > 0).double().mean()), neg_share=float((adv_e < 0).double().mean()))
            for level, clip_range in (("grpo", GRPO_CLIP), ("gspo", GSPO_CLIP)):
                _, logged = get_loss(level)(logp_e, logp_s_e, adv_e, mask_e, clip_low=clip_range[0], clip_high=clip_range[1])
                prefix = "tok" if level == "grpo" else "seq"
                out[k][f"{prefix}_low"] = float(logged["losses/clip_frac_low"])
                out[k][f"{prefix}_high"] = float(logged["losses/clip_frac_high"])
    return out


def lognormal_ratio_prediction(d_rms: float, n_rms: float, window, L: int) -> dict[str, np.ndarray]:
    """The memoryless lognormal statistics at window positions j (J,) for rms per-step drifts d, n:
    token (GRPO's eps) and sequence (GSPO's eps) log-ratio variances and tail fractions."""
    J = np.asarray(window)
    tok = ratio_statistics("token", d_rms, J, L, clip_low=GRPO_CLIP[0], clip_high=GRPO_CLIP[1], noise_drift=n_rms)
    seq = ratio_statistics("sequence", d_rms, J, L, clip_low=GSPO_CLIP[0], clip_high=GSPO_CLIP[1], noise_drift=n_rms)
    return dict(tok_var=tok.log_var, seq_var=seq.log_var, tok_below=tok.clip.below, tok_above=tok.clip.above,
                seq_below=seq.clip.below, seq_above=seq.clip.above)


def walk_ratio_prediction(probs: np.ndarray, signed, lr: float, clip, window) -> tuple[dict, float]:
    """The clip-aware walk's statistics (same keys as `lognormal_ratio_prediction`) for an update with clip range
    `clip` ((inf, inf): unclipped), and the largest mass its grid left in an edge cell. Also GSPO's
    sign-aware clip fractions (seq_low_mix, seq_high_mix) from the sign-conditional mixture: log s
    given the sign of A is normal with the walk's conditional mean and the within-sign variance
    (the walk's Var[log s] less the spread of the three conditional means)."""
    advantage, pos, neg = signed
    eps = (None, None) if math.isinf(clip[0]) else clip
    law = clipped_log_ratio_law(probs, advantage, lr=lr, batch_size=GROUPS * GROUP_SIZE, window=window,
                                clip_low=eps[0], clip_high=eps[1])
    tok, seq = law.token(*GRPO_CLIP), law.sequence(*GSPO_CLIP)
    shares = [float((probs * w).sum(-1).mean()) for w in (pos, neg, 1.0 - pos - neg)]  # P(A > 0), P(A < 0), P(A = 0)
    means = [law.conditional_sequence_mean(probs, w) for w in (pos, neg, 1.0 - pos - neg)]  # each (J,)
    between = sum(q * m**2 for q, m in zip(shares, means)) - sum(q * m for q, m in zip(shares, means)) ** 2
    within = np.maximum(seq["var"] - between, 0.0)
    high = shares[0] * clip_fractions(means[0], within, *GSPO_CLIP).above
    low = shares[1] * clip_fractions(means[1], within, *GSPO_CLIP).below
    return dict(tok_var=tok["var"], seq_var=seq["var"], tok_below=tok["below"], tok_above=tok["above"],
                seq_below=seq["below"], seq_above=seq["above"], seq_low_mix=low, seq_high_mix=high), float(law.edge_mass.max())
