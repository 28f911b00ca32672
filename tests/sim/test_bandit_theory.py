"""Expected two-arm dynamics against the theory's nonlinear map, step for step.

The theory (`theory.bandit.expected_map`) iterates z <- z + lr (mu v + F(z, z_s)) with the
closed-form force; the simulator differentiates the objectives' losses with autograd on logits
(0, z). Both are float64; they differ by rounding only, so they must agree to STEP_TOL for every
correction x advantage x KL estimator x group size and for T in {1, 3}.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory import bandit as tb
from gspo_dynamics.theory.hyperparams import Hyperparams, SGD

# Rounding in F is ~1e-16 per step; STEPS steps of these stable, unsaturated runs amplify it by
# far less than 1e4. Runs stay inside |z| < Z_LIMIT, where the theory's 1 - sigmoid(z) still
# carries 12 significant digits (beyond it the simulator's softmax is the more accurate of the two).
STEP_TOL = 1e-12
STEPS = 40
Z_LIMIT = 8.0
REF_LOGIT = -1.0

# (correction, advantage, KL estimator, (G, std estimator)); the estimator matters at finite G only
COMBOS = list(
    itertools.product(
        ["none", "token", "sequence"],
        ["mean", "std"],
        ["exact", "k3"],
        [(None, "unbiased"), (2, "unbiased"), (5, "biased")],
    )
)


def _grid(correction, advantage, kl_estimator, group):
    group_size, estimator = group
    return [
        Hyperparams(
            lr=lr,
            optimizer=SGD(momentum=mu),
            refresh_interval=T,
            correction=correction,
            advantage=advantage,
            kl_estimator=kl_estimator,
            group_size=group_size,
            kl_coef=beta,
            clip_low=0.2,
            clip_high=0.28,
            std_estimator=estimator,
        )
        for lr, mu, T, beta in [
            (0.5, 0.0, 1, 0.5),
            (2.0, 0.0, 3, 1.0),  # big steps within a period: clipping is active
            (1.0, 0.7, 3, 1.0),
            (2.0, 0.5, 1, 1.0),
            (0.05, 0.9, 3, 0.0),
        ]
    ]


def _theory_trajectory(hp: Hyperparams, bandit: tb.TwoArmBandit, steps: int) -> np.ndarray:
    z, v, z_s = bandit.start_logit, 0.0, None
    out = [z]
    for t in range(steps):
        if t % hp.refresh_interval == 0:
            z_s = z
        z, v = tb.expected_map(z, v, z_s, bandit, hp, hp.lr, hp.momentum)
        out.append(float(z))
    return np.array(out)


@pytest.mark.parametrize("correction, advantage, kl_estimator, group", COMBOS)
def test_expected_two_arm_reproduces_theory_map(correction, advantage, kl_estimator, group):
    hps = _grid(correction, advantage, kl_estimator, group)
    bandit = tb.TwoArmBandit(ref_logit=REF_LOGIT)
    result = simulate(BanditTask.from_theory(bandit), hps, steps=STEPS, expected=True, record_logits=True)
    z_sim = result.logit_gap[:, :, 0, 0]  # (STEPS + 1, C)
    for c, hp in enumerate(hps):
        z_theory = _theory_trajectory(hp, bandit, STEPS)
        assert np.all(np.abs(z_theory) < Z_LIMIT), "premise: the run stays unsaturated"
        np.testing.assert_allclose(z_sim[:, c], z_theory, atol=STEP_TOL, rtol=0, err_msg=f"config {c}: {hp}")
    np.testing.assert_allclose(result.reward[:, :, 0, 0], tb.sigmoid(z_sim), atol=1e-15)


def test_clipping_is_exercised_by_the_grid():
    """Premise of the test above: some off-policy step has a ratio outside the clip range."""
    hp = _grid("token", "mean", "exact", (None, "unbiased"))[1]
    bandit = tb.TwoArmBandit(ref_logit=REF_LOGIT)
    z = _theory_trajectory(hp, bandit, STEPS)
    z_s = np.repeat(z[:: hp.refresh_interval], hp.refresh_interval)[: STEPS + 1]
    p, p_s = tb.sigmoid(z), tb.sigmoid(z_s)
    clipped = (p / p_s > 1.0 + hp.clip_high) | ((1.0 - p) / (1.0 - p_s) < 1.0 - hp.clip_low)
    assert clipped.any()


def test_finite_group_expected_force_is_the_theory_drive_factor():
    """One step from many starting logits: (z1 - z0) / lr = F(z0, z0) with m(p) at finite G."""
    z0 = np.linspace(-4.0, 4.0, 17)
    for G, advantage, estimator in [(2, "std", "unbiased"), (3, "mean", "unbiased"), (8, "std", "biased"), (16, "std", "unbiased")]:
        hp = Hyperparams(lr=1.0, group_size=G, advantage=advantage, std_estimator=estimator, kl_coef=0.2)
        bandit = tb.TwoArmBandit(ref_logit=0.0)
        start = np.stack([np.zeros_like(z0), z0], axis=-1)[None, None, :, :]  # (1, 1, P, 2): prompts = starts
        task = BanditTask.prompts([0.5] * z0.size)
        result = simulate(task, [hp], steps=1, expected=True, record_logits=True, start_logits=start)
        step = result.logit_gap[1, 0, 0] - z0
        np.testing.assert_allclose(step, tb.force(z0, z0, bandit, hp), atol=STEP_TOL, rtol=0)
