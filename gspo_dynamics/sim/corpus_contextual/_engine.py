"""GRPO on the contextual task, in numpy, logging what TRL's GRPOTrainer logs at every step.

One optimizer step t (1-based), with pi_s the sampling policy refreshed every T steps:

    if (t - 1) % T == 0:   pi_s <- pi_theta                                 (refresh)
    draw B = num_groups distinct prompts, and for each G responses a_g ~ pi_s(. | p)       (B, G)
    r_g = r(p, a_g);  A_g = (r_g - mean r) / (std r + eps)  ("std"), or r_g - mean r ("mean");
                      A_g = 0 in a group whose rewards are all equal          (no signal)
    w_g = pi_theta(a_g | p) / pi_s(a_g | p)           (correction "token"; w = 1 for "none")
    J = 1/(B G) sum_{p, g} min(w_g A_g, clip(w_g, 1 - eps_low, 1 + eps_high) A_g)
        - beta / B sum_p KL(pi_theta(.|p) || pi_ref(.|p))                   (exact KL, fresh)
    theta <- optimizer(theta, grad J)                                        (ascent; Adam or heavy-ball)

With `kl_in_reward` the KL leaves J and enters the reward at rollout time instead (verl's
use_kl_in_reward): A is computed from r_g - beta log(pi_s(a_g | p) / pi_ref(a_g | p)), a restoring
force frozen at pi_s for T steps. The logged reward statistics are those of r either way.

With logits z(p, .), d/dz of w A = w A (e_a - pi) where the clip is inactive and 0 where it is
active (A > 0 and w > 1 + eps_high, or A < 0 and w < 1 - eps_low); d/dz KL = pi (log pi - log
pi_ref - KL). `none` applies the stale samples' gradient A (e_a - pi_theta) as is, as a pipeline
does that recomputes the "old" log-probs with the learner (ratio 1): its expectation
pi_s (r - b_s) is frozen at the refresh (a zero-order hold), where the ratio-weighted one follows
pi_theta.

Logged per step (TRL key names): reward, reward_std (mean of unbiased group stds), frac_reward_zero_std,
rewards/<fn>/mean and /std, entropy (H(pi_theta) at the step's prompts), kl (k3 on the samples,
TRL's estimator; only with beta > 0), clip_ratio/{low,high,region}_mean, completions/* lengths,
grad_norm (of the loss, before the step), loss. Evaluations score `eval_samples` fresh responses
per evaluation prompt with the TRUE reward: eval_reward, eval_reward_std, eval_completions/mean_length.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.sim.corpus_contextual._optim import init_state, optimizer_step
from gspo_dynamics.sim.corpus_contextual._task import ContextualTask, RunConfig, log_softmax

STD_EPS = 1e-4  # TRL's eps in A = (r - mean) / (std + eps)
TRUTH = ("expected_reward", "expected_true_reward", "policy_entropy")  # E_pi[r], E_pi[r_true], H(pi): means over all prompts


def sample_actions(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: p (N, K) probabilities, u (N, M) uniforms in (0, 1] -> (N, M) action indices.

    The CDF is divided by its last entry so that it ends at exactly 1.0: an action of probability 0
    (UNREACHABLE) then can never be drawn, even at u = 1.
    """
    cdf = np.cumsum(p, -1)
    cdf = cdf / cdf[:, -1:]
    return (cdf[:, None, :] < u[..., None]).sum(-1)  # (N, M)


def surrogate_grad(pi: np.ndarray, actions: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """d/dz of 1/(B G) sum_{b,g} coef[b, g] log pi_z(actions[b, g] | b), at logits z with softmax pi (B, K):

        1/(B G) sum_g coef[b, g] (e_{a_g} - pi[b])        (coef = w A where the clip is inactive, else 0)
    """
    B, K = pi.shape
    flat = (np.arange(B)[:, None] * K + actions).ravel()  # (B G,) index of (b, a_g) in a flat (B, K)
    onehot_sum = np.bincount(flat, coef.ravel(), B * K).reshape(B, K)
    return (onehot_sum - coef.sum(1, keepdims=True) * pi) / coef.size


def kl_grad(pi: np.ndarray, log_ratio: np.ndarray) -> np.ndarray:
    """d/dz KL(pi_z || pi_ref) = pi (log(pi / pi_ref) - KL), per row; log_ratio = log pi - log pi_ref (B, K)."""
    return pi * (log_ratio - (pi * log_ratio).sum(-1, keepdims=True))


class Policy:
    """theta = [W.ravel() (if tabular), V.ravel()]  ->  logits (P, K), and the chain rule back."""

    def __init__(self, task: ContextualTask):
        self.task = task
        P, K = task.shape
        self.n_tab = P * K if task.tabular else 0
        self.size = self.n_tab + task.features.shape[1] * K

    def logits(self, theta: np.ndarray) -> np.ndarray:
        P, K = self.task.shape
        z = self.task.ref_logits + self.task.features @ theta[self.n_tab:].reshape(-1, K)
        return z + theta[: self.n_tab].reshape(P, K) if self.n_tab else z

    def grad(self, prompts: np.ndarray, g_logits: np.ndarray) -> np.ndarray:
        """d/dtheta of sum_b g_logits[b] . logits(prompts[b]); prompts distinct, g_logits (B, K)."""
        P, K = self.task.shape
        out = np.zeros(self.size)
        if self.n_tab:
            out[: self.n_tab].reshape(P, K)[prompts] = g_logits
        out[self.n_tab:] = (self.task.features[prompts].T @ g_logits).ravel()  # (R, K)
        return out


def _lengths(task: ContextualTask, prompts, actions, jitter: float, rng) -> np.ndarray:
    """Sampled response lengths, shaped like `actions`: the action's mean length times a log-normal factor, capped."""
    mean = task.lengths[prompts[..., None], actions]
    noisy = mean * np.exp(jitter * rng.standard_normal(actions.shape) - 0.5 * jitter**2)
    return np.clip(np.rint(noisy), 1, task.max_length)


def run_contextual(task: ContextualTask, cfg: RunConfig, seed: int) -> tuple[dict[str, np.ndarray], dict[int, dict], dict]:
    """Train one run: (metrics, evals, truth).

    metrics: {TRL name: (steps,)} measured on the step's samples; evals: {step: {eval name: float}};
    truth: {name in TRUTH: (steps,)}, the noise-free state of the policy before each step over all P
    prompts (what the recipes' physical facts are stated in; never written to a log).
    The loop keeps what the metrics need, (S, B, G) per sample, and reduces it once at the end.
    """
    rng = np.random.default_rng(seed)
    eval_rng = np.random.default_rng([seed, 1])  # evaluation draws never shift the training sampler
    hp = cfg.hp
    P, K = task.shape
    S, B, G, T = cfg.steps, min(hp.num_groups, P), hp.group_size, hp.refresh_interval
    reward = task.reward
    tables = np.stack([reward, task.true_reward], -1)  # (P, K, 2)
    logp_ref_all = log_softmax(task.ref_logits)  # (P, K)
    policy = Policy(task)
    theta = np.zeros(policy.size)
    state = init_state(theta)
    token, beta_loss = hp.correction == "token", hp.kl_coef if not cfg.kl_in_reward else 0.0
    low, high = 1.0 - hp.clip_low, 1.0 + hp.clip_high
    b_idx = np.arange(B)[:, None]  # (B, 1) row index of a (B, G) gather
    prompts_h = np.empty((S, B), dtype=np.int64)
    actions_h = np.empty((S, B, G), dtype=np.int64)
    w_h, adv_h, logp_a_h = np.empty((S, B, G)), np.empty((S, B, G)), np.empty((S, B, G))
    entropy_h, grad_norm_h = np.empty(S), np.empty(S)
    truth = {name: np.empty(S) for name in TRUTH}
    evals: dict[int, dict] = {}
    for i in range(S):
        logits = policy.logits(theta)  # (P, K)
        logp_all = log_softmax(logits)
        pi_all = np.exp(logp_all)
        truth["expected_reward"][i], truth["expected_true_reward"][i] = np.einsum("pk,pkc->c", pi_all, tables) / P
        truth["policy_entropy"][i] = -np.einsum("pk,pk->", pi_all, logp_all) / P
        if i % T == 0:
            logp_s_all = logp_all  # refresh the sampling policy
        prompts = rng.choice(P, B, replace=False)  # (B,)
        logp_s = logp_s_all[prompts]  # (B, K)
        actions = sample_actions(np.exp(logp_s), 1.0 - rng.random((B, G)))  # (B, G)
        shaped = reward[prompts[:, None], actions]  # (B, G)
        logp_ref = logp_ref_all[prompts]
        if cfg.kl_in_reward:  # r - beta log(pi_s / pi_ref) at the sampled action, fixed at rollout time
            shaped = shaped - hp.kl_coef * (logp_s - logp_ref)[b_idx, actions]
        zero = np.all(shaped == shaped[:, :1], axis=1, keepdims=True)  # (B, 1) groups without signal
        centred = shaped - shaped.mean(1, keepdims=True)
        if hp.advantage == "std":
            centred = centred / (shaped.std(1, ddof=1, keepdims=True) + STD_EPS)  # unbiased, as torch.std in TRL
        adv = np.where(zero, 0.0, centred)  # (B, G)
        logp, pi = logp_all[prompts], pi_all[prompts]  # (B, K) current policy
        logp_a = logp[b_idx, actions]  # (B, G)
        w = np.exp(logp_a - logp_s[b_idx, actions]) if token else np.ones_like(adv)
        clipped = ((adv < 0) & (w < low)) | ((adv > 0) & (w > high))
        coef = np.where(clipped, 0.0, w * adv)  # (B, G) d objective / d log pi(a_g)
        g_logits = surrogate_grad(pi, actions, coef)  # (B, K)
        if beta_loss > 0:
            g_logits -= beta_loss / B * kl_grad(pi, logp - logp_ref)
        grad = policy.grad(prompts, g_logits)
        prompts_h[i], actions_h[i], w_h[i], adv_h[i], logp_a_h[i] = prompts, actions, w, adv, logp_a
        entropy_h[i], grad_norm_h[i] = -np.einsum("bk,bk->", pi, logp) / B, np.sqrt(grad @ grad)
        theta, state = optimizer_step(theta, grad, state, cfg.lr_at(i + 1), hp.optimizer)
        if cfg.eval_every and ((i + 1) % cfg.eval_every == 0 or i + 1 == S):
            evals[i + 1] = _evaluate(task, policy.logits(theta), cfg, eval_rng)
    length_rng = np.random.default_rng([seed, 2])
    lengths = _lengths(task, prompts_h, actions_h, cfg.length_jitter, length_rng)  # (S, B, G)
    metrics = _metrics(task, hp, prompts_h, actions_h, w_h, adv_h, logp_a_h, lengths, logp_ref_all, beta_loss)
    metrics.update(entropy=entropy_h, grad_norm=grad_norm_h)
    return metrics, evals, truth


def _metrics(task, hp, prompts, actions, w, adv, logp_a, lengths, logp_ref_all, beta_loss) -> dict[str, np.ndarray]:
    """TRL's per-step metrics from the kept samples; every array (S, B, G), prompts (S, B)."""
    low, high = 1.0 - hp.clip_low, 1.0 + hp.clip_high
    idx = (prompts[..., None], actions)
    r = task.reward[idx]  # (S, B, G)
    clip_lo, clip_hi = (adv < 0) & (w < low), (adv > 0) & (w > high)
    truncated = lengths >= task.max_length
    n_term = (~truncated).sum((1, 2))
    out = {
        "reward": r.mean((1, 2)), "reward_std": r.std(2, ddof=1).mean(1),
        "frac_reward_zero_std": np.all(r == r[..., :1], axis=2).mean(1),
        "clip_ratio/low_mean": clip_lo.mean((1, 2)), "clip_ratio/high_mean": clip_hi.mean((1, 2)),
        "clip_ratio/region_mean": (clip_lo | clip_hi).mean((1, 2)),
        "completions/mean_length": lengths.mean((1, 2)), "completions/min_length": lengths.min((1, 2)),
        "completions/max_length": lengths.max((1, 2)), "completions/clipped_ratio": truncated.mean((1, 2)),
        "completions/mean_terminated_length": np.where(truncated, 0.0, lengths).sum((1, 2)) / np.maximum(n_term, 1),
        "loss": -np.minimum(w * adv, np.clip(w, low, high) * adv).mean((1, 2)),
    }
    for f, name in enumerate(task.component_names):
        part = task.components[..., f][idx]  # (S, B, G)
        flat = part.reshape(part.shape[0], -1)
        out[f"rewards/{name}/mean"], out[f"rewards/{name}/std"] = flat.mean(1), flat.std(1, ddof=1)
    if hp.kl_coef > 0:
        d = logp_ref_all[idx] - logp_a  # k3 = e^d - d - 1 >= 0, TRL's per-token KL at the sampled responses
        out["kl"] = (np.exp(d) - d - 1.0).mean((1, 2))
        out["loss"] = out["loss"] + beta_loss * out["kl"]
    return out


def _evaluate(task: ContextualTask, logits: np.ndarray, cfg: RunConfig, rng) -> dict[str, float]:
    """Fresh responses of the current policy on the evaluation prompts, scored by the true reward."""
    n = min(task.shape[0], cfg.eval_prompts)
    prompts = np.arange(n)
    actions = sample_actions(np.exp(log_softmax(logits[:n])), 1.0 - rng.random((n, cfg.eval_samples)))
    scores = task.true_reward[prompts[:, None], actions]  # (n, samples)
    lengths = _lengths(task, prompts, actions, cfg.length_jitter, rng)
    return {"eval_reward": float(scores.mean()), "eval_reward_std": float(scores.std(1, ddof=1).mean()),
            "eval_completions/mean_length": float(lengths.mean())}
