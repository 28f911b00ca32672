"""The fused two-arm fast path of the bandit simulator: one step as ~20 elementwise ops on (C, S, P).

Applies when every prompt is the theory's one-logit bandit: two arms with rewards (0, 1) and only
the arm-1 logit trained (`BanditTask.two_arm`, `.prompts`). Then with z = l1 - l0, p = sigmoid(z)
(current policy), p_s = sigmoid(z_s) (sampling policy) and q = sigmoid(z_ref), a group with k ~
Bin(G, p_s) successes has advantages A1(k) = (1 - k/G)/s_k on its k successes and A0(k) = -(k/G)/s_k
on its G - k failures (s_k = 1 or group std + eps; flat groups 0), and its ascent direction
d/dl1 of (1/G) sum_i (policy term)_i is a function of k alone:

    none:              g_k                                 (the score 1[a=1] - p_s at pi_s)
    token / sequence:  g_k H,   H = w1 (1 - p) 1{w1 <= 1 + eps_high} + w0 p 1{w0 >= 1 - eps_low}
                       (k/G A1 w1 (1 - p) + (G - k)/G A0 w0 (-p), each term clipped by its sign)

with g_k = (k/G)(1 - k/G)/s_k (`theory.finite_group.group_gradient_coefficients`), w1 = p / p_s,
w0 = (1 - p)/(1 - p_s); token = sequence for one-token responses. The step's drive is the mean over
num_groups groups. Expected mode replaces the mean of g_k by m(p_s) = E_k[g_k] (finite G, the exact
Binomial sum) or its G -> infinity limit. KL at the current policy (as `_engine`):

    exact:  -beta p (1 - p) (z - z_ref)                             (d KL(pi || pi_ref) / dz)
    k3:     -beta (p - q) (1/N) [N1 (1 - p)/p_s + (N - N1) p/(1 - p_s)]   (N1 successes of N samples,
            the ratio-weighted k3 gradient; expected mode: its mean -beta (p - q))

Random numbers are consumed exactly as `_engine.BanditEngine` does (one U(0, 1) per (seed, prompt,
sample) per step, action 1 iff u > pi_s(0)), so the two engines give the same runs up to float64
rounding. The optimizer and refresh rules are the engine's, on the one trained logit.
"""

from __future__ import annotations

import numpy as np
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim._base import BanditEngineBase, group_tables, initial_logits, pack_configs, resolve_device
from gspo_dynamics.sim._task import BanditTask


def fast_path_applies(task: BanditTask) -> bool:
    """Every prompt has two arms with rewards (0, 1) and only the arm-1 logit trained."""
    return (
        isinstance(task, BanditTask)
        and task.num_arms == 2
        and bool(np.all(task.rewards == [0.0, 1.0]))
        and bool(np.all(task.trainable == [False, True]))
    )


class TwoArmEngine(BanditEngineBase):
    """`_engine.BanditEngine`'s state and step for two-arm tasks, on the trained logit l1 only.

    Same constructor, `logits` (C, S, P, 2), `reward()`, `step()`, `t` and `configs` as the engine.
    """

    def _check_task(self, task: BanditTask) -> None:
        if not fast_path_applies(task):
            raise ConfigError("the fast engine needs two-arm prompts with rewards (0, 1) and only the arm-1 logit trained")

    def _build(self, task: BanditTask, *, seeds: int, device, dtype, seed: int, start_logits) -> None:
        hp, expected = self.hp, self.expected
        self.device, self.dtype = resolve_device(device), dtype
        cfg = pack_configs(self.configs, self.device, dtype)
        C, S, P = len(self.configs), seeds, task.num_prompts
        self.shape = (C, S, P, 2)

        def tensor(x):
            return torch.as_tensor(np.array(x), dtype=dtype, device=self.device)

        def column(x):  # (C, 1, 1, 1) -> (C, 1, 1)
            return x[..., 0]

        self.lr, self.momentum, self.gain = column(cfg.lr), column(cfg.momentum), column(cfg.gain)
        self.beta2, self.adam_eps, self.is_adam = column(cfg.beta2), column(cfg.adam_eps), column(cfg.is_adam)
        self.kl_coef = column(cfg.kl_coef)
        self.lower, self.upper = 1.0 - column(cfg.clip_low), 1.0 + column(cfg.clip_high)  # clip bounds on w
        self.any_adam, self.any_kl = cfg.any_adam, cfg.any_kl
        ref = tensor(task.ref_logits)  # (P, 2)
        self.ref_logit = ref[:, 1] - ref[:, 0]  # (P,) z_ref
        self.ref_prob = torch.sigmoid(self.ref_logit)  # (P,) q
        logits = initial_logits(task, start_logits, self.shape, tensor)
        self.l0 = logits[..., 0].contiguous()  # (C, S, P), never trained
        self.l1 = logits[..., 1].contiguous()  # (C, S, P), the trained logit
        self.l0_is_zero = bool((self.l0 == 0.0).all())  # then z = l1 (the common case; skips two ops a step)
        self.l1_s = self.l1.clone()  # (C, S, P) sampling logit, refreshed every T_c steps
        self._refresh_interval_host = np.array([hp.refresh_interval for hp in self.configs])  # (C,) T_c
        self.moment1 = torch.zeros_like(self.l1)  # SGD velocity v, or Adam m
        self.moment2 = torch.zeros_like(self.l1)  # Adam s
        tables = group_tables(hp)
        if tables is not None:
            self._k, self._coef, self._log_binom = map(tensor, tables)  # (G + 1,)
        self.generator = None if expected else torch.Generator(device=self.device).manual_seed(int(seed))

    # ---- observables -----------------------------------------------------------------------------

    @property
    def logits(self) -> torch.Tensor:
        """(C, S, P, 2) current logits (l0, l1)."""
        return torch.stack([self.l0, self.l1], dim=-1)

    def reward(self) -> torch.Tensor:
        """(C, S, P) expected reward pi(1) = sigmoid(l1 - l0)."""
        return torch.sigmoid(self.l1 - self.l0)

    # ---- the step ---------------------------------------------------------------------------------

    def _sampled_drive(self, z_s: torch.Tensor):
        """(mean over groups of g_k, successes per sample N1 / N), each (C, S, P); draws the samples."""
        C, S, P, _ = self.shape
        G, groups = self.hp.group_size, self.hp.num_groups
        u = torch.rand((S, P, G * groups), generator=self.generator, device=self.device, dtype=self.dtype)
        q0 = torch.sigmoid(-z_s)  # (C, S, P) pi_s(0): action 1 iff u > pi_s(0), the engine's inverse-CDF rule
        k = (u.view(S, P, groups, G) > q0[..., None, None]).sum(-1)  # (C, S, P, groups) successes per group
        drive = self._coef.index_select(0, k.view(-1)).view(k.shape).mean(-1)  # (C, S, P) g_k, group mean
        if self.hp.kl_estimator != "k3":
            return drive, None
        return drive, k.sum(-1).to(self.dtype) / (G * groups)

    def _expected_drive(self, z_s: torch.Tensor) -> torch.Tensor:
        """(C, S, P) drive factor m(p_s) (module docstring of `theory.finite_group`)."""
        hp, p = self.hp, torch.sigmoid(z_s)
        if hp.group_size is None:
            u = p * (1.0 - p)
            return u if hp.advantage == "mean" else u / (u.sqrt() + hp.std_eps)
        p = p[..., None]  # (C, S, P, 1)
        G = hp.group_size
        log_pmf = self._log_binom + torch.xlogy(self._k, p) + torch.xlogy(G - self._k, 1.0 - p)  # (C, S, P, G + 1)
        return (log_pmf.exp() * self._coef).sum(-1)

    def ascent(self) -> torch.Tensor:
        """(C, S, P) ascent direction g on l1 (module docstring); stochastic mode draws samples."""
        hp = self.hp
        z, z_s = (self.l1, self.l1_s) if self.l0_is_zero else (self.l1 - self.l0, self.l1_s - self.l0)  # (C, S, P)
        p = torch.sigmoid(z)
        if self.expected:
            drive, successes = self._expected_drive(z_s), None
        else:
            drive, successes = self._sampled_drive(z_s)
        if hp.correction != "none":
            # importance ratios in log space: finite even where p_s rounds to 0 or 1
            w1 = torch.exp(torch.nn.functional.logsigmoid(z) - torch.nn.functional.logsigmoid(z_s))
            w0 = torch.exp(torch.nn.functional.logsigmoid(-z) - torch.nn.functional.logsigmoid(-z_s))
            up = torch.where(w1 <= self.upper, w1 * (1.0 - p), 0.0)
            down = torch.where(w0 >= self.lower, w0 * p, 0.0)
            drive = drive * (up + down)
        if not self.any_kl:
            return drive
        if hp.kl_estimator == "exact":
            kl = p * (1.0 - p) * (z - self.ref_logit)
        else:
            kl = p - self.ref_prob
            if successes is not None:  # the ratio-weighted k3 gradient at the drawn actions
                p_s = torch.sigmoid(z_s)
                kl = kl * (successes * (1.0 - p) / p_s + (1.0 - successes) * p / (1.0 - p_s))
        return drive - self.kl_coef * kl

    @torch.no_grad()
    def step(self) -> None:
        refresh = self.t % self._refresh_interval_host == 0  # (C,) on the host: skips the tensor ops when all agree
        if refresh.all():
            self.l1_s = self.l1
        elif refresh.any():
            self.l1_s = torch.where(torch.as_tensor(refresh, device=self.device)[:, None, None], self.l1, self.l1_s)
        g = self.ascent()
        self.moment1 = self.momentum * self.moment1 + self.gain * g
        update = self.moment1  # SGD: v
        if self.any_adam:
            n = self.t + 1  # Adam's step count for the bias corrections
            self.moment2 = self.beta2 * self.moment2 + (1.0 - self.beta2) * g * g
            m_hat = self.moment1 / (1.0 - self.momentum**n)
            s_hat = self.moment2 / (1.0 - self.beta2**n)
            update = torch.where(self.is_adam, m_hat / (s_hat.sqrt() + self.adam_eps), update)
        self.l1 = self.l1 + self.lr * update
        self.t += 1
