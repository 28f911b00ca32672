"""The diagnose figure: six panels, data where the log has it, a note where it does not; never saved."""

import numpy as np
from matplotlib.figure import Figure

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import RunLog
from gspo_dynamics.plots.diagnose import diagnosis_figure, plot_zero_std
from gspo_dynamics.theory.trajectory import single_exponential


def _log(series):
    steps = np.arange(1, 201, dtype=np.int64)
    return RunLog(steps=steps, series={k: np.asarray(v, float) for k, v in series.items()}, format="jsonl",
                  source="<synthetic>")


def test_reward_only_log_draws_the_fit_and_says_what_is_missing():
    t = np.arange(200.0)
    r = single_exponential(t, 0.8, 0.2, 30.0) + np.random.default_rng(0).normal(0, 0.02, 200)
    fig = diagnosis_figure(diagnose(_log({"reward": r})))
    assert isinstance(fig, Figure) and len(fig.axes) == 6
    reward_ax = fig.axes[0]
    assert len(reward_ax.lines) >= 2  # data and the fitted curve
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    for missing in ("no zero-std fraction", "no entropy", "no KL", "no completion length"):
        assert missing in texts


def test_zero_std_panel_overlays_the_theory_when_g_is_known():
    p = np.full(200, 0.1)
    rng = np.random.default_rng(1)
    k = rng.binomial(8, p[:, None], size=(200, 16))
    d = diagnose(_log({"reward": k.mean(1) / 8, "frac_zero_std": ((k == 0) | (k == 8)).mean(1)}))
    fig = Figure()
    ax = fig.subplots()
    plot_zero_std(ax, d)
    labels = [line.get_label() for line in ax.lines]
    assert any("p^G" in label for label in labels)
