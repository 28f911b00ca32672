"""The `diagnose` figure: reward with the closed-form fit and its regime, zero-std fraction against
the theory's p^G + (1-p)^G, entropy, KL, completion length, and the verdicts.

Each panel function draws into a given axis; `diagnosis_figure` lays them out on a new Figure and
returns it (the caller saves it). Panels without data say so instead of staying blank.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from gspo_dynamics.plots.style import DATA, FIT, THEORY, WARN, figure_style, note
from gspo_dynamics.theory.finite_group import zero_variance_probability

PANEL_SIZE = (3.6, 2.5)  # inches per panel
VERDICT_FONT = 7.0  # points, monospace: a character is ~0.6 of this wide
# characters per line of the verdict panel: 80% of the panel width (the rest is padding), less the indent
WRAP = int(0.8 * PANEL_SIZE[0] * 72 / (0.6 * VERDICT_FONT)) - 4


def _points(ax, steps, values, label: str, color=DATA) -> None:
    ax.plot(steps, values, "o-", color=color, lw=0.6, ms=2.0, alpha=0.8, label=label)


def plot_reward_fit(ax, diagnosis) -> None:
    """Measured reward, the selected closed-form fit, its plateau band and regime; eval reward if logged."""
    log = diagnosis.log
    if log is None or "reward" not in log or log.n_points("reward") == 0:
        note(ax, "no reward in the log")
        return
    s, r = log.valid("reward")
    _points(ax, s, r, "reward")
    fit = diagnosis.fit
    if fit is not None:
        t = np.linspace(fit.t_start, fit.t_end, 400)
        ax.plot(t, fit.predict(t), color=FIT, lw=1.8,
                label=f"fit: {fit.variant} ({fit.regime}), R$^2$={fit.r_squared:.2f}")
        r_inf, se = fit.params["r_inf"], fit.stderr.get("r_inf", math.nan)
        ax.axhline(r_inf, color=FIT, ls="--", lw=0.8)
        if math.isfinite(se):
            ax.axhspan(r_inf - se, r_inf + se, color=FIT, alpha=0.12, lw=0)
        imp = diagnosis.implications
        if imp is not None and math.isfinite(imp.time_to_plateau.value) and imp.time_to_plateau.value <= fit.t_end:
            ax.axvline(imp.time_to_plateau.value, color=FIT, ls=":", lw=0.8)
    if "eval/reward" in log and log.n_points("eval/reward") > 0:
        es, ev = log.valid("eval/reward")
        ax.plot(es, ev, "s-", color=THEORY, ms=3, lw=1.0, label="eval reward")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("reward")
    ax.set_title("reward and closed-form fit")
    # below the axes, never over the data (the curve fills the panel); constrained layout makes room
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, fontsize=6.5, frameon=False)


def plot_zero_std(ax, diagnosis) -> None:
    """Zero-std group fraction, and p^G + (1-p)^G at the measured success rate when G is known."""
    log = diagnosis.log
    if log is None or "frac_zero_std" not in log or log.n_points("frac_zero_std") == 0:
        note(ax, "no zero-std fraction in the log\n(TRL frac_reward_zero_std, v0.18+)")
        ax.set_title("zero-std groups")
        return
    s, f = log.valid("frac_zero_std")
    _points(ax, s, f, "measured")
    G = diagnosis.theory.get("group_size")
    r = log["reward"] if "reward" in log else None
    if G and r is not None:
        keep = np.isfinite(r) & (r >= 0) & (r <= 1)
        if keep.any():
            ax.plot(log.steps[keep], zero_variance_probability(r[keep], G), color=THEORY, lw=1.4,
                    label=f"$p^G+(1-p)^G$, G={G} ({'given' if diagnosis.theory.get('group_size_source') == 'hparams' else 'estimated'})")
    ax.axhline(0.5, color=WARN, ls="--", lw=0.8)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("fraction of groups")
    ax.set_title("zero-std groups")
    ax.legend(loc="best")


def plot_series(ax, diagnosis, name: str, title: str, missing: str) -> None:
    """One logged series (and its eval counterpart), or a note saying it is not in the log."""
    log = diagnosis.log
    if log is None or name not in log or log.n_points(name) == 0:
        note(ax, missing)
        ax.set_title(title)
        return
    s, v = log.valid(name)
    _points(ax, s, v, "train")
    if f"eval/{name}" in log and log.n_points(f"eval/{name}") > 0:
        es, ev = log.valid(f"eval/{name}")
        ax.plot(es, ev, "s-", color=THEORY, ms=3, lw=1.0, label="eval")
        ax.legend(loc="best")
    ax.set_xlabel("optimizer step")
    ax.set_title(title)


def plot_verdicts(ax, diagnosis) -> None:
    """The report's first lines (`Diagnosis.headline`: the verdict, the one thing to do, the findings), then the
    other verdicts with their confidences."""
    ax.axis("off")
    lines = [_wrap(line, WRAP) for line in diagnosis.headline()] + [""]
    for v in diagnosis.verdicts[1:4]:
        lines.append(f"also: {v.mode.replace('_', ' ')}  ({v.confidence:.2f})")
    ax.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", transform=ax.transAxes, fontsize=VERDICT_FONT, family="monospace")


def _wrap(text: str, width: int, max_lines: int = 6) -> str:
    words, out, line = text.split(), [], ""
    for w in words:
        if len(line) + len(w) + 1 > width:
            out.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    out.append(line)
    return "\n  ".join(out[:max_lines]) + (" ..." if len(out) > max_lines else "")


def diagnosis_figure(diagnosis) -> Figure:
    """A 2 x 3 Figure: reward + fit, zero-std vs theory, entropy, KL, length, verdicts. Not saved."""
    with figure_style():
        fig = Figure(figsize=(3 * PANEL_SIZE[0], 2 * PANEL_SIZE[1]), layout="constrained")
        axes = fig.subplots(2, 3)
        plot_reward_fit(axes[0, 0], diagnosis)
        plot_zero_std(axes[0, 1], diagnosis)
        plot_series(axes[0, 2], diagnosis, "entropy", "entropy", "no entropy in the log\n(TRL logs it from v0.20)")
        plot_series(axes[1, 0], diagnosis, "kl_ref", "KL to the reference",
                    "no KL in the log\n(TRL logs kl only when beta > 0)")
        plot_series(axes[1, 1], diagnosis, "mean_length", "mean completion length", "no completion length in the log")
        plot_verdicts(axes[1, 2], diagnosis)
        source = diagnosis.log_summary.get("source", "")
        fig.suptitle(source if len(source) < 90 else "..." + source[-87:], fontsize=8)
    return fig
