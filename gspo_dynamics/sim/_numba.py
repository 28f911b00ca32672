"""The two-arm bandit as one compiled numba kernel: each run stepped in place, runs over threads.

Optional (`pip install 'gspo-dynamics[fast]'`, numba >= 0.60). Same system, same equations and
same random numbers as the fused torch engine `_fast.TwoArmEngine` (its module docstring states
them): z = l1 - l0, p = sigmoid(z), p_s = sigmoid(z_s), q = sigmoid(z_ref), and per step

    z_s <- z                                   if t % T_c == 0
    drive = (1/n_g) sum_groups g_k,  k = #{i : u_i > 1 - p_s}   (stochastic; expected: m(p_s))
    drive *= w1 (1 - p) 1{w1 <= 1 + eps_high} + w0 p 1{w0 >= 1 - eps_low}   (token / sequence)
    g = drive - beta [p (1 - p)(z - z_ref)  |  (p - q) (N1/N (1 - p)/p_s + (1 - N1/N) p/(1 - p_s))]
    v <- mu v + g, l1 <- l1 + lr v   (SGD)   or Adam with bias corrections (`_engine` docstring)

The uniforms u are the torch engines' own: one torch.rand((S, P, G n_g)) draw per step from a
torch.Generator seeded with `seed`, drawn here a chunk of steps at a time (one (n, S, P, G n_g)
draw gives the same numbers as n consecutive ones), so for the same seed this engine follows the
torch engines' runs up to float64 rounding, with common random numbers across configs.

Why it is faster than the torch engines: z_s changes only at a refresh, so 1 - p_s, the expected
drive m(p_s) and the log-sigmoids of z_s are computed once per refresh, not once per step; a
block of LANES runs is stepped through a whole chunk of steps with its state in cache-resident
scalars, not streamed through memory once per elementwise op; and the blocks (runs ordered seed,
prompt, config with the config fastest, so a block's runs share their uniforms) are split over
threads. Thread count: min(torch.get_num_threads(), numba's maximum), so one knob
(torch.set_num_threads) sets it for every engine; 1 runs a serial build of the same kernel.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim._base import BanditEngineBase, group_tables, initial_logits, pack_configs, resolve_device
from gspo_dynamics.sim._fast import fast_path_applies
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.theory.hyperparams import Hyperparams

CHUNK_UNIFORMS = 1 << 20  # uniforms drawn per torch.rand call (8 MiB of float64): bounds memory on long runs
KL_NONE, KL_EXACT, KL_K3 = 0, 1, 2
# Below this many run-steps per advance() the serial kernel runs: waking a thread pool costs ~0.1 ms
# (measured 60-150 us per call on 2 cores, far more when they are busy), the work of ~5000 run-steps.
PARALLEL_MIN_WORK = 100_000
LANES = 4  # runs a thread steps in lockstep (1.3x faster than 1 lane at G = 8; 8 and 16 lanes measured the same as 4)


@functools.cache
def available() -> bool:
    """True when numba imports (the "fast" extra installed and working); imported on first call."""
    try:
        import numba  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True


def _log_sigmoids(x):
    """(log sigmoid(x), log sigmoid(-x)) = (min(x, 0) - L, min(-x, 0) - L), L = log1p(exp(-|x|))."""
    tail = math.log1p(math.exp(-abs(x)))
    return min(x, 0.0) - tail, min(-x, 0.0) - tail


def _expected_drive(p_s, G, coef, log_binom, std_adv, std_eps):
    """m(p_s) = sum_k Bin(k; G, p_s) g_k, or its G -> infinity limit p_s (1 - p_s) [/ (sqrt(.) + eps)]."""
    if G == 0:
        var = p_s * (1.0 - p_s)
        return var / (math.sqrt(var) + std_eps) if std_adv else var
    log_p = math.log(p_s) if p_s > 0.0 else -math.inf
    log_q = math.log(1.0 - p_s) if p_s < 1.0 else -math.inf
    total = 0.0
    for k in range(G + 1):  # xlogy: 0 log 0 = 0, as torch.xlogy
        log_pmf = log_binom[k] + (k * log_p if k > 0 else 0.0) + ((G - k) * log_q if k < G else 0.0)
        total += math.exp(log_pmf) * coef[k]
    return total


def _run_steps(l1, l1_s, m1, m2, l0, z_ref, q_ref, lr, mom, gain, beta2, adam_eps, is_adam, refresh_interval,
               lower, upper, kl_coef, coef, log_binom, u, t0, n, expected, G, groups, std_adv, std_eps,
               corrected, kl, any_adam):
    """Advance every run (c, s, p) from step t0 by n steps, in place. A compiled kernel (numba, `_kernel`):
    one loop nest kept whole, so it compiles to one function (over 80 lines by design).

    State (C, S, P): l1, l1_s (sampling logit), m1, m2 (optimizer moments), l0 (fixed logit).
    Per prompt (P,): z_ref, q_ref = sigmoid(z_ref). Per config (C,): the optimizer and KL
    coefficients, refresh interval T_c, clip bounds lower = 1 - eps_low, upper = 1 + eps_high.
    coef, log_binom (G + 1,): g_k and log C(G, k). u: (n, S, P, G groups) uniforms (stochastic), flattened.
    G = 0 means G -> infinity (expected mode only).
    """
    C, S, P = l1.shape
    R, N = C * S * P, G * groups
    blocks = (R + LANES - 1) // LANES
    # every block's lane state, allocated once per call: allocating per block measured 77 vs 69 ns per
    # run-step where a call covers few steps (16384 runs, 8 steps a call)
    lanes_f, lanes_i = np.zeros((blocks, 12, LANES)), np.zeros((blocks, 4, LANES), np.int64)
    for b in _prange(blocks):
        # LANES runs in lockstep: their independent chains can overlap in the CPU (one run alone
        # waits on the latency of exp at every step). Run r = ((s P) + p) C + c: config fastest, so a
        # block's runs share their uniforms. A last partial block repeats run R - 1 and does not store it.
        c, s, p = lanes_i[b, 0], lanes_i[b, 1], lanes_i[b, 2]
        phase = lanes_i[b, 3]  # t % T_c, counted (an integer division per step is slow)
        x, x_s, v, w, zero = lanes_f[b, 0], lanes_f[b, 1], lanes_f[b, 2], lanes_f[b, 3], lanes_f[b, 4]
        p_s, q0, fixed, ls1_s, ls0_s = lanes_f[b, 5], lanes_f[b, 6], lanes_f[b, 7], lanes_f[b, 8], lanes_f[b, 9]
        drive, frac = lanes_f[b, 10], lanes_f[b, 11]
        for j in range(LANES):
            r = min(b * LANES + j, R - 1)
            c[j], s[j], p[j] = r % C, r // C // P, r // C % P
            x[j], x_s[j], zero[j] = l1[c[j], s[j], p[j]], l1_s[c[j], s[j], p[j]], l0[c[j], s[j], p[j]]
            v[j], w[j] = m1[c[j], s[j], p[j]], m2[c[j], s[j], p[j]]
            phase[j] = t0 % refresh_interval[c[j]]
            if phase[j] != 0:  # mid-period: the cached functions of z_s, as at its refresh
                z_s = x_s[j] - zero[j]
                p_s[j], q0[j] = 1.0 / (1.0 + math.exp(-z_s)), 1.0 / (1.0 + math.exp(z_s))
                if expected:
                    fixed[j] = _expected_drive(p_s[j], G, coef, log_binom, std_adv, std_eps)
                ls1_s[j], ls0_s[j] = _log_sigmoids(z_s)
        for t in range(t0, t0 + n):
            # Two passes over the lanes per step: the stale part (refresh, draws, drive), which does
            # not depend on this step's z, then the current-policy chain z -> p -> g -> v -> z.
            for j in range(LANES):
                if phase[j] == 0:  # refresh: everything that depends on z_s only
                    x_s[j] = x[j]
                    z_s = x_s[j] - zero[j]
                    p_s[j] = 1.0 / (1.0 + math.exp(-z_s))
                    q0[j] = 1.0 / (1.0 + math.exp(z_s))  # pi_s(0), as torch.sigmoid(-z_s)
                    if expected:
                        fixed[j] = _expected_drive(p_s[j], G, coef, log_binom, std_adv, std_eps)
                    if corrected:
                        ls1_s[j], ls0_s[j] = _log_sigmoids(z_s)
                phase[j] += 1
                if phase[j] == refresh_interval[c[j]]:
                    phase[j] = 0
                if expected:
                    drive[j] = fixed[j]
                    continue
                total, successes = 0.0, 0.0
                start = (((t - t0) * S + s[j]) * P + p[j]) * N  # u[t - t0, s, p, 0] in the flat u
                for group in range(groups):
                    # successes counted in a float (exact): measured faster than an integer count of
                    # the booleans (and than a helper compiled with fastmath "reassoc")
                    k = 0.0
                    for i in range(start + group * G, start + (group + 1) * G):
                        k += 1.0 if u[i] > q0[j] else 0.0  # action 1 iff u > pi_s(0)
                    total += coef[int(k)]
                    successes += k
                drive[j], frac[j] = total / groups, successes / N
            for j in range(LANES):
                cj = c[j]
                z = x[j] - zero[j]
                pz = 1.0 / (1.0 + math.exp(-z))
                if corrected:  # importance ratios in log space, as `_fast`
                    ls1, ls0 = _log_sigmoids(z)
                    w1, w0 = math.exp(ls1 - ls1_s[j]), math.exp(ls0 - ls0_s[j])
                    up = w1 * (1.0 - pz) if w1 <= upper[cj] else 0.0
                    down = w0 * pz if w0 >= lower[cj] else 0.0
                    g = drive[j] * (up + down)
                else:
                    g = drive[j]
                if kl == KL_EXACT:
                    g = g - kl_coef[cj] * (pz * (1.0 - pz) * (z - z_ref[p[j]]))
                elif kl == KL_K3:
                    force = pz - q_ref[p[j]]
                    if not expected:
                        force = force * (frac[j] * (1.0 - pz) / p_s[j] + (1.0 - frac[j]) * pz / (1.0 - p_s[j]))
                    g = g - kl_coef[cj] * force
                v[j] = mom[cj] * v[j] + gain[cj] * g
                step = v[j]
                if any_adam:
                    w[j] = beta2[cj] * w[j] + (1.0 - beta2[cj]) * g * g
                    if is_adam[cj]:
                        m_hat = v[j] / (1.0 - mom[cj] ** (t + 1))
                        s_hat = w[j] / (1.0 - beta2[cj] ** (t + 1))
                        step = m_hat / (math.sqrt(s_hat) + adam_eps[cj])
                x[j] = x[j] + lr[cj] * step
        for j in range(min(LANES, R - b * LANES)):
            l1[c[j], s[j], p[j]], l1_s[c[j], s[j], p[j]] = x[j], x_s[j]
            m1[c[j], s[j], p[j]], m2[c[j], s[j], p[j]] = v[j], w[j]


_prange = range  # replaced by numba.prange in the compiled kernel


@functools.cache
def _kernel(parallel: bool):
    """`_run_steps` compiled: over threads (numba.prange) or serial; fastmath off; cached on disk.

    The serial variant gets its own name, so that the two have separate on-disk caches (numba's
    cache key does not include the parallel flag).
    """
    import numba

    options = dict(fastmath=False, cache=True, error_model="numpy")  # x / 0 gives inf or nan, as torch
    helpers = {f.__name__: numba.njit(**options)(f) for f in (_log_sigmoids, _expected_drive)}
    scope = dict(_run_steps.__globals__, **helpers, _prange=numba.prange if parallel else range)
    name = "_run_steps" if parallel else "_run_steps_serial"
    source = type(_run_steps)(_run_steps.__code__, scope, name)
    source.__qualname__ = name
    return numba.njit(parallel=parallel, **options)(source)


class NumbaEngine(BanditEngineBase):
    """`_fast.TwoArmEngine` as a numba kernel: same constructor, `logits`, `reward()`, `step()`, `t`, `configs`.

    `advance(n)` runs n steps in one kernel call (`simulate` uses it between records).
    """

    def _check_task(self, task: BanditTask) -> None:
        if not available():
            raise ConfigError("the numba engine needs numba: pip install 'gspo-dynamics[fast]' (or use engine='fast')")
        if not fast_path_applies(task):
            raise ConfigError("the numba engine needs two-arm prompts with rewards (0, 1) and only the arm-1 logit trained")

    def _check_run(self, hp: Hyperparams, task: BanditTask, expected: bool, device, dtype) -> None:
        if resolve_device(device).type != "cpu" or dtype != torch.float64:
            raise ConfigError(f"the numba engine runs on the CPU in float64, got device {device!r} and {dtype}")

    def _build(self, task: BanditTask, *, seeds: int, device, dtype, seed: int, start_logits) -> None:
        hp, expected = self.hp, self.expected
        cfg = pack_configs(self.configs, "cpu", torch.float64)
        C, S, P = len(self.configs), seeds, task.num_prompts
        self.shape = (C, S, P, 2)

        def per_config(x):  # (C, 1, 1, 1) tensor -> (C,) array
            return np.ascontiguousarray(x.reshape(-1).numpy())

        self._config_args = (
            per_config(cfg.lr), per_config(cfg.momentum), per_config(cfg.gain), per_config(cfg.beta2),
            per_config(cfg.adam_eps), per_config(cfg.is_adam), per_config(cfg.refresh_interval),
            1.0 - per_config(cfg.clip_low), 1.0 + per_config(cfg.clip_high), per_config(cfg.kl_coef),
        )
        self._any_adam = cfg.any_adam
        self._kl = KL_NONE if not cfg.any_kl else KL_EXACT if hp.kl_estimator == "exact" else KL_K3
        ref = np.asarray(task.ref_logits, dtype=float)
        self._z_ref = np.ascontiguousarray(ref[:, 1] - ref[:, 0])  # (P,)
        self._q_ref = torch.sigmoid(torch.from_numpy(self._z_ref)).numpy()  # (P,) q, as `_fast`

        def tensor(x):
            return torch.as_tensor(np.array(x), dtype=torch.float64)

        logits = initial_logits(task, start_logits, self.shape, tensor).numpy()
        self.l0 = np.ascontiguousarray(logits[..., 0])  # (C, S, P), never trained
        self.l1 = np.ascontiguousarray(logits[..., 1])  # (C, S, P), the trained logit
        self.l1_s = self.l1.copy()  # (C, S, P) sampling logit
        self.moment1 = np.zeros_like(self.l1)  # SGD velocity v, or Adam m
        self.moment2 = np.zeros_like(self.l1)  # Adam s
        tables = group_tables(hp)  # (G + 1,) each; unused placeholders for G -> infinity
        _, self._coef, self._log_binom = (None, np.zeros(1), np.zeros(1)) if tables is None else tables
        self._samples = 0 if expected else hp.group_size * hp.num_groups  # uniforms per (seed, prompt) per step
        self.generator = None if expected else torch.Generator().manual_seed(int(seed))

    @property
    def logits(self) -> torch.Tensor:
        """(C, S, P, 2) current logits (l0, l1)."""
        return torch.from_numpy(np.stack([self.l0, self.l1], axis=-1))

    def reward(self) -> torch.Tensor:
        """(C, S, P) expected reward pi(1) = sigmoid(l1 - l0)."""
        return torch.sigmoid(torch.from_numpy(self.l1 - self.l0))

    def step(self) -> None:
        self.advance(1)

    def advance(self, n: int) -> None:
        """Run n optimizer steps (chunks of at most CHUNK_UNIFORMS uniforms per kernel call)."""
        import numba

        positive_int("steps to advance", n, minimum=0)

        C, S, P, _ = self.shape
        hp = self.hp
        torch_threads = torch.get_num_threads()
        threads = max(1, min(torch_threads, numba.config.NUMBA_NUM_THREADS))
        kernel = _kernel(parallel=threads > 1 and C * S * P * n >= PARALLEL_MIN_WORK)
        per_step = max(1, S * P * self._samples)
        empty = np.zeros(0)
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            while n > 0:
                chunk = n if self.expected else max(1, min(n, CHUNK_UNIFORMS // per_step))
                u = empty if self.expected else torch.rand(
                    (chunk, S, P, self._samples), generator=self.generator, dtype=torch.float64).numpy().reshape(-1)
                kernel(self.l1, self.l1_s, self.moment1, self.moment2, self.l0, self._z_ref, self._q_ref,
                       *self._config_args, self._coef, self._log_binom, u, self.t, chunk, self.expected,
                       hp.group_size or 0, hp.num_groups, hp.advantage == "std", hp.std_eps,
                       hp.correction != "none", self._kl, self._any_adam)
                self.t += chunk
                n -= chunk
        finally:
            numba.set_num_threads(previous)
            # numba's OpenMP threading layer shares torch's OpenMP runtime, and a parallel launch resets
            # its thread count (measured: torch.get_num_threads() went from 1 to 2)
            torch.set_num_threads(torch_threads)
