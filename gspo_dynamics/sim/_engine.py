"""The batched softmax-bandit update: state over (configs C, seeds S, prompts P, arms K), one step.

One optimizer step of every run at once. Per step t, for config c:

1. refresh: if t % T_c == 0 the sampling logits become the current logits;
2. samples: stochastic mode draws num_groups groups of G actions per prompt from the sampling
   policy pi_s; expected mode takes all K actions as weighted samples with weights pi_s(a);
3. loss (through `gspo_dynamics.objectives`): the group-advantage policy loss, mean over a
   prompt's samples, summed over prompts, seeds and configs (they are independent parameters),
   plus beta_c times the KL penalty at the current policy; autograd w.r.t. the (C, S, P, K)
   logits gives the ascent direction g = -grad loss (zero on frozen logits);
4. optimizer: heavy-ball SGD  v <- mu v + g,  l <- l + lr v;  or Adam with bias correction
   m <- b1 m + (1 - b1) g,  s <- b2 s + (1 - b2) g^2,  l <- l + lr m_hat / (sqrt(s_hat) + eps).

Random numbers are common across configs (one uniform per (seed, prompt, sample), shared by all
configs), so a config's trajectory does not depend on which other configs share the batch.
"""

from __future__ import annotations

import numpy as np
import torch

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.objectives import get_loss, group_advantages, kl_exact_categorical, kl_k3
from gspo_dynamics.sim._base import BanditEngineBase, group_tables, initial_logits, pack_configs, resolve_device
from gspo_dynamics.sim._task import BanditTask
from gspo_dynamics.theory.hyperparams import Hyperparams

LOSS_FOR_CORRECTION = {"none": "pg", "token": "grpo", "sequence": "gspo"}
SCALE_FOR_ADVANTAGE = {"mean": "none", "std": "group"}


class BanditEngine(BanditEngineBase):
    """State (logits, sampling logits, optimizer moments) of C x S runs on P prompts, and its step."""

    def _check_run(self, hp: Hyperparams, task: BanditTask, expected: bool, device, dtype) -> None:
        if expected and hp.group_size is not None and not task.is_binary:
            raise ConfigError(
                f"expected dynamics at finite group size (G = {hp.group_size}) are exact only for rewards in {{0, 1}}; "
                "use group_size=None or the stochastic mode"
            )

    def _build(self, task: BanditTask, *, seeds: int, device, dtype, seed: int, start_logits) -> None:
        hp, expected = self.hp, self.expected
        self.device, self.dtype = resolve_device(device), dtype
        self.cfg = pack_configs(self.configs, self.device, dtype)
        self.loss_fn = get_loss(LOSS_FOR_CORRECTION[hp.correction])
        C, S, (P, K) = len(self.configs), seeds, task.rewards.shape
        self.shape = (C, S, P, K)

        def tensor(x):
            return torch.as_tensor(np.array(x), dtype=dtype, device=self.device)

        self.rewards = tensor(task.rewards)  # (P, K)
        self.ref_logits = tensor(task.ref_logits).expand(self.shape)  # (C, S, P, K)
        self.trainable = tensor(task.trainable)  # (P, K), 1 = trained
        # a prompt whose arms all pay the same carries no signal: its advantages are exactly 0
        self.informative = tensor(task.rewards.max(axis=1, keepdims=True) > task.rewards.min(axis=1, keepdims=True)).bool()
        logits = initial_logits(task, start_logits, self.shape, tensor)
        self.logits = logits  # (C, S, P, K)
        self.sampling_logits = logits.clone()  # (C, S, P, K), refreshed every T_c steps
        self.moment1 = torch.zeros_like(logits)  # SGD velocity v, or Adam m
        self.moment2 = torch.zeros_like(logits)  # Adam s
        tables = group_tables(hp)
        if tables is not None:
            self._k, self._coef, self._log_binom = map(tensor, tables)  # (G + 1,)
        self.generator = None if expected else torch.Generator(device=self.device).manual_seed(int(seed))
        # per-sample constants of the flattened loss batch, B = C S P N samples
        N = K if expected else hp.group_size * hp.num_groups
        B = C * S * P * N
        self._samples_shape = (C, S, P, N)
        self._mask = torch.ones((B, 1), dtype=torch.bool, device=self.device)
        self._clip_low = self.cfg.clip_low.expand(self._samples_shape).reshape(B)
        self._clip_high = self.cfg.clip_high.expand(self._samples_shape).reshape(B)
        self._uniform_weights = torch.full(self._samples_shape, 1.0 / N, dtype=dtype, device=self.device)
        self._all_actions = torch.arange(K, device=self.device).expand(self.shape)

    # ---- observables -----------------------------------------------------------------------------

    def reward(self, logits: torch.Tensor | None = None) -> torch.Tensor:
        """(C, S, P) expected reward sum_a pi(a) r_a of the policy with these logits."""
        logits = self.logits if logits is None else logits
        return (torch.softmax(logits, dim=-1) * self.rewards).sum(-1)

    # ---- samples and their advantages -------------------------------------------------------------

    def _expected_samples(self, pi_s: torch.Tensor):
        """All K actions with weights pi_s(a) and advantages whose pi_s-weighted sum is E[group gradient].

        G -> infinity: A_a = (r_a - R_s) / sigma_s (sigma_s = 1 for "mean", the population std
        + eps for "std"), the limit of the group statistics.
        Finite G, binary rewards: A~_a = m(p_s) / p_s for r_a = 1 and -m(p_s) / (1 - p_s) for r_a = 0,
        m = finite_group.drive_factor and p_s = R_s. Proof: a group with k ~ Bin(G, p_s) successes has
        advantages A+(k) = (1 - k/G)/s_k on successes and A-(k) = -(k/G)/s_k on failures, and each
        sample contributes A_i h(a_i), where h(a) (the per-unit-advantage gradient of the loss at a)
        depends on the action only: the clip test depends on the sign of A, fixed by the action
        (A = 0 contributes nothing). Given k, the successes are iid from pi_s restricted to
        {r = 1}, so E[(1/G) sum_i A_i h(a_i) | k] = g_k (H+ - H-) with g_k = (k/G)(1 - k/G)/s_k,
        H+ = sum_{r_a=1} pi_s(a) h(a) / p_s, H- = sum_{r_a=0} pi_s(a) h(a) / (1 - p_s). Averaging
        over k gives E[g] = m(p_s) (H+ - H-) = sum_a pi_s(a) A~_a h(a).
        """
        r = self.rewards  # (P, K)
        mean = (pi_s * r).sum(-1, keepdim=True)  # (C, S, P, 1) R_s
        G = self.hp.group_size
        if G is None:
            adv = r - mean
            if self.hp.advantage == "std":
                sigma = (pi_s * adv**2).sum(-1, keepdim=True).sqrt()
                adv = adv / (sigma + self.hp.std_eps)
            adv = torch.where(self.informative, adv, torch.zeros_like(adv))
        else:
            p = mean
            log_pmf = self._log_binom + torch.xlogy(self._k, p) + torch.xlogy(G - self._k, 1.0 - p)  # (C, S, P, G + 1)
            m = (log_pmf.exp() * self._coef).sum(-1, keepdim=True)  # (C, S, P, 1) drive factor m(p_s)
            inside = (p > 0.0) & (p < 1.0)  # at p_s in {0, 1} every group is flat: m = 0
            safe = torch.where(inside, p, torch.full_like(p, 0.5))
            adv = torch.where(r == 1.0, m / safe, -m / (1.0 - safe))
            adv = torch.where(inside, adv, torch.zeros_like(adv))
        return self._all_actions, pi_s, adv  # (C, S, P, K) each

    def _sampled(self, pi_s: torch.Tensor):
        """num_groups groups of G actions per (config, seed, prompt) from pi_s, weights 1/N."""
        C, S, P, K = self.shape
        G, N = self.hp.group_size, self.hp.group_size * self.hp.num_groups
        u = torch.rand((S, P, N), generator=self.generator, device=self.device, dtype=self.dtype)
        cdf = pi_s.cumsum(-1)  # (C, S, P, K)
        actions = torch.searchsorted(cdf, u.expand(C, S, P, N).contiguous()).clamp_max(K - 1)  # (C, S, P, N)
        rewards = self.rewards.expand(self.shape).gather(-1, actions)  # (C, S, P, N)
        scale = SCALE_FOR_ADVANTAGE[self.hp.advantage]
        adv = group_advantages(rewards.reshape(-1, G), scale, self.hp.std_estimator, self.hp.std_eps)
        return actions, self._uniform_weights, adv.reshape(C, S, P, N)

    # ---- the step ---------------------------------------------------------------------------------

    def ascent(self, logits: torch.Tensor, sampling_logits: torch.Tensor) -> torch.Tensor:
        """Ascent direction g = -d loss / d logits, zero on frozen logits; stochastic mode draws samples.

        logits, sampling_logits: (C, S, P, K), the engine's shape. Returns (C, S, P, K).
        """
        leaf = logits.detach().requires_grad_(True)
        sampling_logits = sampling_logits.detach()
        logp_all = torch.log_softmax(leaf, dim=-1)  # (C, S, P, K) current policy
        logp_s_all = torch.log_softmax(sampling_logits, dim=-1)  # (C, S, P, K) sampling policy
        pi_s = logp_s_all.exp()
        actions, weights, adv = self._expected_samples(pi_s) if self.expected else self._sampled(pi_s)
        logp_old = logp_s_all.gather(-1, actions)  # (C, S, P, N)
        if self.hp.correction == "none":
            # the stale gradient as is: the value (so the gradient) is taken at the sampling logits,
            # and the identity map leaf - leaf.detach() (= 0) routes it to the current logits
            logp = torch.log_softmax(sampling_logits + (leaf - leaf.detach()), dim=-1).gather(-1, actions)
        else:
            logp = logp_all.gather(-1, actions)
        B = logp.numel()
        loss, _ = self.loss_fn(
            logp.reshape(B, 1), logp_old.reshape(B, 1), adv.reshape(B), self._mask,
            clip_low=self._clip_low, clip_high=self._clip_high, weights=weights.reshape(B),
        )
        total = loss * B  # (1/B) sum_i w_i l_i -> sum over (c, s, p) of each prompt's weighted mean
        if self.cfg.any_kl:
            beta = self.cfg.kl_coef
            if self.hp.kl_estimator == "exact":
                total = total + (beta[..., 0] * kl_exact_categorical(leaf, self.ref_logits)).sum()
            else:
                # k3 at the samples, reweighted by the detached ratio pi/pi_s: its gradient is the
                # current-policy E_pi[(1 - pi_ref/pi) grad log pi], whichever policy sampled
                logp_now = logp_all.gather(-1, actions)
                ratio = torch.exp(logp_now - logp_old).detach()
                k3 = kl_k3(logp_now, torch.log_softmax(self.ref_logits, dim=-1).gather(-1, actions))
                total = total + (beta * weights * ratio * k3).sum()
        (grad,) = torch.autograd.grad(total, leaf)
        return -grad * self.trainable

    @torch.no_grad()
    def step(self) -> None:
        cfg = self.cfg
        refresh = (self.t % cfg.refresh_interval) == 0  # (C, 1, 1, 1)
        self.sampling_logits = torch.where(refresh, self.logits, self.sampling_logits)
        with torch.enable_grad():
            g = self.ascent(self.logits, self.sampling_logits)
        self.moment1 = cfg.momentum * self.moment1 + cfg.gain * g
        update = self.moment1  # SGD: v
        if cfg.any_adam:
            n = self.t + 1  # Adam's step count for the bias corrections
            self.moment2 = cfg.beta2 * self.moment2 + (1.0 - cfg.beta2) * g * g
            m_hat = self.moment1 / (1.0 - cfg.momentum**n)
            s_hat = self.moment2 / (1.0 - cfg.beta2**n)
            update = torch.where(cfg.is_adam, m_hat / (s_hat.sqrt() + cfg.adam_eps), update)
        self.logits = self.logits + cfg.lr * update
        self.t += 1
