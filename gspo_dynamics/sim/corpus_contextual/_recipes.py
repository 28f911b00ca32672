"""One recipe per failure mode: the physical cause, drawn with randomised size, hyperparameters and length.

A recipe is a function (rng, k) -> Recipe, k the run's index within its mode (variants alternate
with k). It fixes the mode's label by construction; `keep` then reads the run's noise-free state
(`truth`, never diagnose's output) and returns how many steps to log, or None when this draw did
not show the physics the recipe names (then the generator redraws, and records how many draws it
took). Response-level KL weights beta here are a per-token beta (0.01-0.04) times the tens of
tokens that carry the decision, hence values around 0.1-1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gspo_dynamics.sim.corpus_contextual._task import ContextualTask, RunConfig, softmax
from gspo_dynamics.sim.corpus_contextual._tasks import graded_task, proxy_task, safe_answer_task
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams

MODES: tuple[str, ...] = (
    "healthy_saturation", "still_rising", "stalled", "dynamical_instability",
    "advantage_degeneracy", "policy_concentration", "reward_hacking", "noise_dominated",
)
SMOOTH = 20  # steps of the running mean that defines peaks of the noise-free reward
STALLED_DRIFT = 0.002  # a stalled run's noise-free reward moves less than this (below a row's sampling sd)
NOISE_LOGGING = (1, 2)  # noise_dominated rows average at most 2 steps: the noise is not averaged away


@dataclass(frozen=True, eq=False)
class Recipe:
    """One draw of a mode's cause: the task, the run, and what to log."""

    task: ContextualTask
    run: RunConfig
    variant: str  # short name of the cause (label["variant"])
    note: str  # the cause in one line (label["note"])
    keep: Callable[[dict], int | None]  # truth -> steps to log, or None: redraw
    logging_choices: tuple[int, ...] = (1, 2, 5, 10)  # logging_steps drawn among these (rows permitting)
    eval_always: bool = False  # the mode's physics is in the eval series: always log it


def _loguniform(rng, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _hp(rng, *, lr: float, B: int, T: int = 1, G: int | None = None, beta: float = 0.0, sgd: bool = False,
        advantage: str | None = None, correction: str = "token") -> Hyperparams:
    """Hyperparams with num_groups = B (one group per drawn prompt); G drawn from {4, 8, 16} unless given."""
    G = G if G is not None else int(rng.choice([4, 8, 16]))
    advantage = advantage or ("std" if rng.random() < 0.8 else "mean")  # Dr. GRPO drops the std for a minority
    opt = SGD(momentum=0.9) if sgd else Adam(beta1=0.9, beta2=0.999)
    return Hyperparams(lr=lr, optimizer=opt, refresh_interval=T, group_size=G, num_groups=B, advantage=advantage,
                       correction=correction, clip_low=0.2, clip_high=float(rng.choice([0.2, 0.28])), kl_coef=beta)


def _smooth(x: np.ndarray) -> np.ndarray:
    return np.convolve(x, np.ones(SMOOTH) / SMOOTH, "valid") if x.size > SMOOTH else x


def _rise(R: np.ndarray) -> tuple[float, float]:
    """(R_0, R_inf): the noise-free start and plateau (mean of the last 10%)."""
    return float(R[0]), float(R[-max(R.size // 10, 1):].mean())


def _first(cond: np.ndarray) -> int | None:
    hits = np.flatnonzero(cond)
    return int(hits[0]) if hits.size else None


def _learning_task(rng, *, capped: tuple[float, float]) -> ContextualTask:
    return graded_task(rng, prompts=int(rng.choice([32, 64, 128, 256])), actions=int(rng.integers(3, 9)),
                       types=int(rng.choice([4, 8, 16])), best_prob=(rng.uniform(0.03, 0.15), rng.uniform(0.3, 0.6)),
                       capped_share=rng.uniform(*capped), format_reward=rng.random() < 0.3)


def _learning_run(rng, task: ContextualTask, *, solved: bool, slow: bool, steps: int) -> RunConfig:
    """A stable configuration: small refresh interval, moderate lr; KL-held (beta 0.7-2) or not (solved)."""
    sgd = rng.random() < 0.2
    if sgd:
        lr = _loguniform(rng, 0.02, 0.1) if slow else _loguniform(rng, 0.2, 1.0)
    else:
        lr = _loguniform(rng, 0.001, 0.004) if slow else _loguniform(rng, 0.008, 0.04)
    beta = 0.0 if solved else rng.uniform(0.7, 2.0)
    B = min(int(rng.choice([8, 16, 32, 64])), task.shape[0])
    hp = _hp(rng, lr=lr, B=B, T=int(rng.choice([1, 2, 4])), beta=beta, sgd=sgd)
    return RunConfig(hp=hp, steps=steps, warmup_steps=int(rng.choice([0, 0, 10, 30])))


def healthy_saturation(rng, k: int) -> Recipe:
    """Stable hyperparameters run past the plateau.

    Physics: with T <= 4 and a moderate Adam step the update is overdamped (the stale lag is far
    below the critical refresh interval), so the expected reward relaxes monotonically to its fixed
    point: the KL-held optimum pi_ref exp(A / beta) below the ceiling (variant kl_plateau), or, with
    beta = 0, the ceiling itself (variant solved): every prompt's best reachable answer, where the
    entropy collapses because the task is solved, not because of a failure. Kept: from 4 x t_90
    (the time to 90% of the rise) to the horizon, so the log reaches the plateau.
    """
    solved = k % 2 == 1
    task = _learning_task(rng, capped=(0.0, 0.3) if solved else (0.1, 0.4))
    horizon = int(rng.integers(600, 1501))
    run = _learning_run(rng, task, solved=solved, slow=False, steps=horizon)
    draw = int(rng.integers(1 << 30))

    def keep(truth) -> int | None:
        R0, Rinf = _rise(truth["expected_reward"])
        if Rinf - R0 < 0.1:
            return None
        t90 = _first(truth["expected_reward"] >= R0 + 0.9 * (Rinf - R0))
        lo = max(4 * (t90 or horizon), 150)
        return None if lo > horizon else int(np.random.default_rng(draw).integers(lo, horizon + 1))

    variant = "solved" if solved else "kl_plateau"
    note = ("beta = 0, stable: rises to the ceiling (entropy collapses: the task is solved)" if solved
            else f"beta = {run.hp.kl_coef:.2f}, stable: rises to the KL-held plateau below the ceiling")
    return Recipe(task, run, variant, note, keep)


def still_rising(rng, k: int) -> Recipe:
    """The healthy configuration with a small learning rate, stopped part-way up.

    Physics: the same overdamped relaxation with a time constant of hundreds of steps; the log is
    the prefix of a 3000-step run cut where the noise-free reward has covered a fraction f in
    [0.3, 0.6] of its eventual rise, so at least 40% of the rise is still ahead.
    """
    solved = k % 2 == 1
    task = _learning_task(rng, capped=(0.0, 0.3))
    run = _learning_run(rng, task, solved=solved, slow=True, steps=3000)
    f = rng.uniform(0.3, 0.6)

    def keep(truth) -> int | None:
        R0, Rinf = _rise(truth["expected_reward"])
        if Rinf - R0 < 0.15:
            return None
        cut = _first(truth["expected_reward"] >= R0 + f * (Rinf - R0))
        return cut if cut is not None and 150 <= cut <= 1500 else None

    return Recipe(task, run, "stopped_early", f"stopped at {f:.0%} of the rise (small lr, slow relaxation)", keep)


def stalled(rng, k: int) -> Recipe:
    """No learning: a learning rate 100-1000x too small, or a KL weight that pins pi to pi_ref.

    Physics: tiny_lr: Adam moves each logit by about lr per step, so 1500 steps at lr <= 1e-5 move it
    by < 0.015 nats: the reward cannot change. kl_pinned: beta = 100-300 (a per-token beta of ~1-3,
    25-75x the usual 0.04, over the tokens that carry the decision) puts the fixed point
    pi_ref exp(A / beta) within a few hundredths of a nat of the reference. Rows average
    B G N >= 1000 samples, so the absence of change is measurable (unlike noise_dominated).
    Kept only if the noise-free reward moves by < STALLED_DRIFT over the run.
    """
    task = _learning_task(rng, capped=(0.1, 0.4))
    pinned = k % 2 == 1
    lr = _loguniform(rng, 0.005, 0.02) if pinned else _loguniform(rng, 2e-6, 1e-5)
    hp = _hp(rng, lr=lr, B=min(int(rng.choice([32, 64])), task.shape[0]), T=int(rng.choice([1, 2])), G=int(rng.choice([8, 16])),
             beta=rng.uniform(100.0, 300.0) if pinned else float(rng.choice([0.0, 0.1])))
    run = RunConfig(hp=hp, steps=int(rng.integers(300, 1501)))

    def keep(truth) -> int | None:
        R = truth["expected_reward"]
        return R.size if abs(R[-1] - R[0]) < STALLED_DRIFT else None

    variant = "kl_pinned" if pinned else "tiny_lr"
    note = f"beta = {hp.kl_coef:.0f} pins pi to pi_ref" if pinned else f"learning rate {lr:.1e}: no movement"
    return Recipe(task, run, variant, note, keep, logging_choices=(5, 10))


def dynamical_instability(rng, k: int) -> Recipe:
    """A stale restoring force overshot by large Adam steps: a period-2T limit cycle, or a collapse.

    Physics: the KL is folded into the reward at rollout time, r - beta log(pi_s / pi_ref) (verl's
    use_kl_in_reward), so for T steps the policy chases the action values of the *old* policy; Adam
    moves each shared logit by about lr per step whatever the gradient's size, ~lr T per refresh
    period. The answer the policy piled mass on carries the largest penalty at the next refresh and
    the one it left the largest bonus, so the next period swings back: a period-2 map of the refresh,
    a square wave of period 2T around a constant mean (variant limit_cycle, lr T ~ 1.4-1.8; a shared
    parameterisation keeps the prompts in phase). Ten times larger steps (variant collapse) throw the
    policy onto one answer per prompt; groups whose responses are all that answer have identical
    shaped rewards, hence zero advantage: an absorbing state. Kept only if that state is a wrong one
    (the noise-free reward stays below half its rise from the start to its peak over the last quarter).
    """
    collapse = k % 2 == 1
    K = int(rng.integers(5, 7)) if collapse else int(rng.integers(4, 9))
    task = graded_task(rng, prompts=int(rng.choice([32, 64, 128])), actions=K,
                       types=1 if collapse else int(rng.integers(1, 4)), best_prob=(0.1, 0.4),
                       capped_share=0.2, exception_share=0.0, tabular=False)
    if collapse:
        T, lr, beta = 16, rng.uniform(0.6, 1.2), rng.uniform(0.8, 1.2)
    else:
        T = int(rng.choice([16, 20, 24, 32]))
        lr, beta = rng.uniform(1.4, 1.8) / T, rng.uniform(0.8, 1.5)
    hp = _hp(rng, lr=float(lr), B=min(int(rng.choice([32, 64])), task.shape[0]), T=T, G=int(rng.choice([8, 16])),
             beta=float(beta), advantage="std")
    run = RunConfig(hp=hp, steps=int(rng.integers(500, 1501)), kl_in_reward=True)

    def keep(truth) -> int | None:
        if not collapse:
            return truth["expected_reward"].size
        start, R = truth["expected_reward"][0], _smooth(truth["expected_reward"])
        peak = int(R.argmax())
        rise = R[peak] - start
        stays_low = R[-R.size // 4:].max() < start + 0.5 * rise  # the whole last quarter, not one swing
        ok = rise > 0.2 and peak < 0.75 * R.size and stays_low
        return truth["expected_reward"].size if ok else None

    variant = "collapse" if collapse else "limit_cycle"
    note = (f"KL in the reward, T = {T}, Adam lr {lr:.2f}: lr T = {lr * T:.1f} nats per period "
            + ("throws the policy onto a wrong answer after the peak" if collapse else "overshoots: period 2T"))
    choices = (1, 2) if collapse else tuple(n for n in (1, 2, 4, 5) if n <= T // 4)
    return Recipe(task, run, variant, note, keep, logging_choices=choices)


def advantage_degeneracy(rng, k: int) -> Recipe:
    """Groups without reward variance: prompts too hard, too easy, or never solvable.

    Physics: a group carries signal only if its G rewards differ, probability 1 - p^G - (1-p)^G at
    success rate p. too_hard: the reference solves a prompt 0.2-1.5% of the time and prompts share
    nothing, so what one success teaches stays on its prompt: most groups are all-zero for the whole
    run. too_easy: 96-99.5%: most groups are all-one. unreachable: every rewarded answer is one the
    model never emits (probability exactly 0), so every group is all-zero: reward, reward_std and
    grad_norm are exactly 0 at every step (with the KL at pi = pi_ref, its gradient is 0 too).
    """
    variant = ("too_hard", "too_easy", "unreachable")[k % 3]
    P, K = int(rng.choice([64, 128, 256])), int(rng.integers(4, 9))
    if variant == "too_hard":
        task = graded_task(rng, prompts=P, actions=K, types=P, best_prob=(0.002, 0.015), partial_share=0.02,
                           shared=False)
    elif variant == "too_easy":
        task = graded_task(rng, prompts=P, actions=K, types=8, best_prob=(0.96, 0.995), partial_share=0.0)
    else:
        task = graded_task(rng, prompts=P, actions=K, types=8, best_prob=(0.1, 0.5), partial_share=0.0,
                           unreachable_best=True)
    hp = _hp(rng, lr=_loguniform(rng, 0.002, 0.01), B=min(int(rng.choice([16, 32, 64])), P), T=int(rng.choice([1, 2])),
             G=int(rng.choice([4, 8])),
             beta=float(rng.choice([0.0, 0.1])))
    run = RunConfig(hp=hp, steps=int(rng.integers(150, 801)))
    note = {"too_hard": "reference success 0.2-1.5%: most groups all-zero",
            "too_easy": "reference success 96-99.5%: most groups all-one",
            "unreachable": "every rewarded answer has probability 0: every group all-zero"}[variant]
    return Recipe(task, run, variant, note, lambda truth: truth["expected_reward"].size)


def policy_concentration(rng, k: int) -> Recipe:
    """Entropy collapse onto a partial-credit answer the reference favours.

    Physics: a "safe" answer (partial credit 0.25-0.6, shared by a prompt type) starts at 35-65%
    probability while each prompt's correct answer starts at 0.5-3%. In a group, the safe answer
    beats the mean of mostly safe/wrong answers, so it gains; at a high Adam lr with no KL it takes
    the whole mass before the rare correct answer is sampled often enough to win; then every group
    is all-safe, the advantage is zero and the policy is locked below the ceiling. Kept if the
    noise-free entropy falls below 30% of its start with the reward >= 0.2 below the ceiling.
    """
    task = safe_answer_task(rng, prompts=int(rng.choice([32, 64, 128])), actions=int(rng.integers(4, 9)),
                            types=int(rng.choice([2, 4, 8])), best_prob=(0.005, 0.03), safe_prob=(0.35, 0.65),
                            safe_credit=float(rng.choice([0.25, 0.5, 0.6])))
    hp = _hp(rng, lr=_loguniform(rng, 0.03, 0.2), B=min(int(rng.choice([8, 16, 32])), task.shape[0]),
             T=int(rng.choice([1, 2])), G=int(rng.choice([4, 8])))
    run = RunConfig(hp=hp, steps=int(rng.integers(200, 1001)))
    ceiling = task.ceiling()

    def keep(truth) -> int | None:
        H, R = truth["policy_entropy"], truth["expected_reward"]
        return R.size if H[-1] < 0.3 * H[0] and R[-1] < ceiling - 0.2 else None

    return Recipe(task, run, "safe_answer", f"Adam lr {hp.lr:.2f}, no KL: collapse onto a partial-credit answer", keep)


def reward_hacking(rng, k: int) -> Recipe:
    """A lenient judge (the proxy) that scores a padded confident answer as correct.

    Physics: the hack starts rare (0.2-1%) but earns the top proxy score on the fooled prompt types,
    where the judge docks honest answers 10-20% (and a length bonus favours it further in variant
    length_bonus). Early on the honest answers are common and learned
    (true reward rises); the hack's share grows through the bias shared by all prompts until it
    dominates: the proxy keeps rising while the true (eval) reward falls, and with the length
    bonus the completions grow to the budget. Kept if the noise-free true reward rises by >= 0.05,
    then falls by >= 0.15 from its peak while the proxy ends above its value at that peak.
    """
    length = k % 2 == 0
    task = proxy_task(rng, prompts=int(rng.choice([32, 64, 128])), actions=int(rng.integers(5, 9)),
                      types=int(rng.choice([4, 8])), best_prob=(0.1, 0.4), hack_prob=(0.002, 0.01),
                      fooled_share=rng.uniform(0.5, 1.0), hack_true=float(rng.choice([0.0, 0.25])),
                      honest_discount=rng.uniform(0.1, 0.2),
                      length_weight=float(rng.choice([0.2, 0.3])) if length else 0.0)
    hp = _hp(rng, lr=_loguniform(rng, 0.005, 0.02), B=min(int(rng.choice([16, 32])), task.shape[0]),
             T=int(rng.choice([1, 2])), G=8, beta=float(rng.choice([0.0, 0.1, 0.3])))
    steps = int(rng.integers(400, 1501))
    run = RunConfig(hp=hp, steps=steps,
                    eval_every=int(rng.choice([20, 25, 50])))

    def keep(truth) -> int | None:
        true, proxy = _smooth(truth["expected_true_reward"]), _smooth(truth["expected_reward"])
        peak = int(true.argmax())
        ok = true[peak] - true[0] >= 0.05 and true[peak] - true[-1] >= 0.15 and proxy[-1] > proxy[peak]
        return truth["expected_reward"].size if ok else None

    variant = "length_bonus" if length else "judge_only"
    return Recipe(task, run, variant, "the judge scores a padded confident answer as correct"
                  + (", plus a length bonus" if length else ""), keep, eval_always=True)


def noise_dominated(rng, k: int) -> Recipe:
    """A real but small drift under per-step sampling noise: few prompts per step, tiny groups.

    Physics: each step sees B = 1-2 prompts of mixed difficulty with G = 2-4 responses, so a row of
    N <= 2 steps averages <= 16 samples: its sd, sqrt(Var_prompts + Var_responses / G) / sqrt(B N),
    is ~0.2-0.4, while a small Adam lr moves the expected reward by only a few hundredths over the
    run. Kept if the noise-free reward drifts by >= 0.03 (there is learning to hide) and by less than
    the sd of one logged row (per-sample sd at pi_ref / sqrt(B G N), N = 2: it is hidden).
    """
    task = graded_task(rng, prompts=int(rng.choice([8, 12, 16])), actions=int(rng.integers(3, 6)), types=2,
                       best_prob=(0.05, 0.6), capped_share=0.3)
    B = int(rng.choice([1, 2]))
    hp = _hp(rng, lr=_loguniform(rng, 0.002, 0.008), B=B, T=1, G=int(rng.choice([2, 3, 4])))
    run = RunConfig(hp=hp, steps=int(rng.integers(150, 501)))
    pi = softmax(task.ref_logits)
    mean = (pi * task.reward).sum(-1).mean()
    sample_sd = float(np.sqrt((pi * task.reward**2).sum(-1).mean() - mean**2))  # over prompts and responses
    row_sd = sample_sd / np.sqrt(B * hp.group_size * max(NOISE_LOGGING))  # the least noisy row allowed

    def keep(truth) -> int | None:
        R = truth["expected_reward"]
        drift = abs(R[-1] - R[0])
        return R.size if 0.03 <= drift < row_sd else None

    return Recipe(task, run, "few_samples", f"B = {B} prompt(s) x G = {hp.group_size} per step, lr {hp.lr:.3f}",
                  keep, logging_choices=NOISE_LOGGING)


RECIPES: dict[str, Callable[[np.random.Generator, int], Recipe]] = {
    "healthy_saturation": healthy_saturation,
    "still_rising": still_rising,
    "stalled": stalled,
    "dynamical_instability": dynamical_instability,
    "advantage_degeneracy": advantage_degeneracy,
    "policy_concentration": policy_concentration,
    "reward_hacking": reward_hacking,
    "noise_dominated": noise_dominated,
}
assert tuple(RECIPES) == MODES
