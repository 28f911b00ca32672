"""The figure registry behind `gspo-dynamics figures`: name -> how to build it, quick or full.

    fig = FIGURES["stability"].make(quick=True)      # a matplotlib Figure, not saved

Each entry computes one figure family's data (`gspo_dynamics.experiments`) and lays out its
panels, drawn by `gspo_dynamics.plots.figures` into given axes. Quick mode runs CI-sized
simulations (the whole set in well under two minutes on two CPU cores); full mode the sizes the
published figures use.
Saving them, the manifest and figures/README.md: `gspo_dynamics.plots.build`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from matplotlib.figure import Figure

from gspo_dynamics._errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
SWEEP = REPO / "sims" / "critical_refresh_interval.json"
TRL_EXAMPLE = REPO / "examples" / "trl_grpo_config.yaml"
LEGEND_GAP = 0.02  # figure fraction between the panels and the legend row below them


class FigureSkipped(Exception):
    """Raised by a figure's `make` when its input is not on this machine (e.g. the real logs): `build`
    reports the reason and goes on, keeping any earlier files of that figure."""


@dataclass(frozen=True)
class FigureSpec:
    name: str
    title: str
    caption: str
    make: Callable[..., Figure]  # make(quick: bool) -> Figure


FIGURES: dict[str, FigureSpec] = {}


def _register(name: str, title: str, caption: str):
    def wrap(make):
        FIGURES[name] = FigureSpec(name, title, caption, make)
        return make
    return wrap


def _legend_below(fig: Figure, axes, ncol: int, handles=None) -> None:
    """One legend for the whole figure, below the panels, so it never covers data."""
    if handles is None:
        handles, seen = [], set()
        for ax in np.ravel(axes):
            for h, label in zip(*ax.get_legend_handles_labels()):
                if label not in seen:
                    seen.add(label)
                    handles.append(h)
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -LEGEND_GAP), ncol=ncol, frameon=False)


def _sweep():
    from gspo_dynamics.predict import load_sweep

    if not SWEEP.is_file():
        raise ConfigError(f"the stability figure needs the sweep {SWEEP} (a source checkout)")
    return load_sweep(SWEEP, quick=True), load_sweep(SWEEP, quick=False)


@_register("stability", "Stability phase diagram",
           "Two-armed bandit (pi_ref(1) = sigmoid(-1), beta = 0.5, mean advantage, no correction, G -> infinity), "
           "heavy-ball SGD. Background: the exact discrete regime of each (learning rate, refresh interval) cell "
           "(monodromy eigenvalues). Lines: the first unstable refresh interval T_c from the exact monodromy matrix "
           "(solid) and from the continuous oscillator rule c(T) <= 0 (dashed). Points: T_c measured by simulating "
           "the expected dynamics from 1e-6 off the fixed point (learning rates of sims/critical_refresh_interval.json). "
           "At high momentum the continuous rule misses the exact boundary; the simulation follows the exact one.")
def _stability(quick: bool) -> Figure:
    from gspo_dynamics.experiments import phase_diagram_data
    from gspo_dynamics.plots.figures._stability import draw_phase_diagram, regime_handles

    quick_sweep, full_sweep = _sweep()
    sweep = quick_sweep if quick else full_sweep
    momenta = sorted({p["momentum"] for p in sweep.points})
    sim_lr = np.array(sorted({p["lr"] for p in sweep.points}))
    t_max = int(sweep.settings["t_max"])
    lr = np.geomspace(0.1, 10.0, 80 if quick else 240)
    base = dataclasses.replace(sweep.configs[0], refresh_interval=1)
    panels = phase_diagram_data(sweep.bandit, base, momenta, lr, sim_lr, t_max, sim_horizon=2000 if quick else None)
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True)
    for i, (ax, panel) in enumerate(zip(axes, panels)):
        draw_phase_diagram(ax, panel, ylabel=i == 0)
    handles = axes[0].get_legend_handles_labels()[0] + regime_handles()
    _legend_below(fig, axes, ncol=6, handles=handles)
    return fig


@_register("trajectories", "Reward trajectories in the three regimes",
           "Two-armed bandit, G = 16, 4 groups per step, T = 1, learning rate 0.2: overdamped (mu = 0), critically "
           "damped (mu solved for damping ratio 1 of the continuous rule) and underdamped (mu = 0.9). Grey: mean "
           "reward over seeds of the stochastic simulation with a 2-standard-error band; dashed: the exact finite-G "
           "expected map from pi_ref (theory, no fit); dotted: the closed-form oscillator fitted to the simulated mean.")
def _trajectories(quick: bool) -> Figure:
    from gspo_dynamics.experiments import regime_configs, regime_data
    from gspo_dynamics.plots.figures._trajectories import draw_regime
    from gspo_dynamics.theory.bandit import TwoArmBandit
    from gspo_dynamics.theory.hyperparams import Hyperparams

    bandit = TwoArmBandit(ref_logit=-1.0)
    base = Hyperparams(lr=0.2, kl_coef=0.5, group_size=16, num_groups=4)
    configs = regime_configs(bandit, base, lr=0.2, underdamped_momentum=0.9)
    curves = regime_data(bandit, configs, steps=300, seeds=32 if quick else 256)
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    for i, (ax, c) in enumerate(zip(axes, curves)):
        draw_regime(ax, c, ylabel=i == 0)
    _legend_below(fig, axes, ncol=3)
    return fig


@_register("slow_start", "Slow start vs the single exponential",
           "Expected dynamics of the two-armed bandit (G -> infinity) with heavy momentum (mu = 0.9, learning rate "
           "0.02, overdamped). Left: the whole run with the fitted oscillator and the fitted single exponential; right: "
           "the first steps, where inertia makes the reward start quadratically (dotted: R_0 + k (R_inf - R_0) t^2 / 2m "
           "of the fitted oscillator) and the single exponential, linear at t = 0, cannot follow.")
def _slow_start(quick: bool) -> Figure:
    from gspo_dynamics.experiments import slow_start_data
    from gspo_dynamics.plots.figures._trajectories import draw_slow_start
    from gspo_dynamics.theory.bandit import TwoArmBandit
    from gspo_dynamics.theory.hyperparams import SGD, Hyperparams

    hp = Hyperparams(lr=0.02, optimizer=SGD(momentum=0.9), kl_coef=0.5)
    d = slow_start_data(TwoArmBandit(ref_logit=-1.0), hp, steps=400)
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    axes = fig.subplots(1, 2)
    draw_slow_start(axes[0], d)
    draw_slow_start(axes[1], d, zoom=40)
    _legend_below(fig, axes, ncol=2)
    return fig


@_register("group_size", "Group-size invariance and the 1/G fluctuation",
           "Two-armed bandit of sims/one_over_g.json (learning rate 0.5, T = 2, beta = 0.5, SGD), stochastic runs. "
           "Left: mean reward over seeds at G = 4 and G = 16 with the exact finite-G expected maps: the curves nearly "
           "coincide, the residual gap is the (1 - 1/G) drive factor. Right: stationary Var(R) (second half of each "
           "run, error bars 2 s.e.) against G, with the discrete-Lyapunov prediction and a 1/G reference line.")
def _group_size(quick: bool) -> Figure:
    from gspo_dynamics.experiments import group_size_data
    from gspo_dynamics.plots.figures._group_size import draw_fluctuation, draw_mean_curves
    from gspo_dynamics.predict import load_sweep

    sweep = load_sweep(REPO / "sims" / "one_over_g.json", quick=quick)
    groups = [hp.group_size for hp in sweep.configs]
    base = dataclasses.replace(sweep.configs[0], group_size=None)
    d = group_size_data(sweep.bandit, base, groups, (4, 16), steps=600 if quick else 3000, seeds=128 if quick else 1024)
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    draw_mean_curves(axes[0], d)
    draw_fluctuation(axes[1], d)
    _legend_below(fig, axes, ncol=3)
    return fig


@_register("zero_variance", "Zero-variance groups vs group size and success rate",
           "Share of groups whose G rewards are all equal, so that every advantage is zero: p^G + (1 - p)^G for "
           "Bernoulli(p) rewards (lines); points: groups drawn at random and passed through "
           "objectives.group_advantages, counting the all-zero ones.")
def _zero_variance(quick: bool) -> Figure:
    from gspo_dynamics.experiments import zero_variance_data
    from gspo_dynamics.plots.figures._group_size import draw_zero_variance, draw_zero_variance_vs_group

    p_points = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95]
    d = zero_variance_data((2, 4, 8, 16, 32), p_points, samples=20_000 if quick else 400_000)
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    draw_zero_variance(axes[0], d)
    draw_zero_variance_vs_group(axes[1], d, (0.05, 0.2, 0.5))
    _legend_below(fig, axes[:1], ncol=7)
    return fig


@_register("ratios", "GRPO vs GSPO: ratio variance and clip fraction vs length, clip-aware theory",
           "Tabular per-position policy on the pattern task (partial credit), from the uniform policy, one refresh "
           "window of T = 8 plain-SGD steps (lr = 3 L: each position gets lr / L of the token-mean step; N = 64 "
           "responses per step), trained with GRPO and with GSPO at each response length L; means over seeds of the "
           "stale steps (window position j >= 1). Thick light line: the clip-aware walk (theory.ratio_drift, the "
           "prediction the ratio-var / ratio-clip claims check), predicted from the hyperparameters alone, for the "
           "GRPO update: each token's log-ratio is a random walk and a sample past the clip bound on its advantage's "
           "side drops out of the step. Thin dotted lines: the memoryless lognormal at the measured sigma^2 "
           "(reference). Left: token log-ratio variance and the sequence log-ratio variance; both theories give "
           "Var[log s] = sigma^2 / L, which the runs follow; the walk also predicts GRPO's token variance from the "
           "hyperparameters at every L. Right: clip fractions (GRPO clips the token ratio at 0.2/0.28, GSPO the "
           "sequence ratio at 3e-4/4e-4; error bars 2 s.e. over seeds). The walk is within ~0.01 of GRPO's clip "
           "fraction for L >= 16 (~0.03 at L = 8) but misses at short responses (L = 1: about 0.005 predicted vs 0.06 measured; L = 2, 4 under by "
           "~0.05-0.07): there most groups are flat and a few large advantages make each step, far from the Gaussian "
           "step the walk assumes (the claims start from random logits, where L = 1 passes). The walk covers GRPO only: "
           "GSPO's sequence clip stops a whole response's gradient. GSPO's dotted line is the reward-aligned law "
           "(theory.ratio_alignment) at the measured Var[log s]: the update raises positive-advantage responses, and "
           "the importance-sampling identity L Cov(log s, r) = Delta R_j (here the tabular policy's exact reward gain) "
           "sets how far log s leans towards the sign of A. It follows the rise and fall with L (0.36 vs 0.41 at "
           "L = 1, within 0.02 at L >= 64) but over-predicts by ~0.1 at L = 8-16, where the two signs' spreads "
           "differ (the law gives both the same); on the tiny transformer it is within 0.035 (row "
           "transformer-clip-sequence in paper_repro/RESULTS.md).")
def _ratios(quick: bool) -> Figure:
    from gspo_dynamics.experiments import ratio_data
    from gspo_dynamics.plots.figures._sequence import draw_clip_fraction, draw_ratio_variance

    lengths = (1, 4, 16, 64) if quick else (1, 2, 4, 8, 16, 32, 64, 128)
    d = ratio_data(lengths, seeds=4 if quick else 16, refresh_interval=8, lr_per_token=3.0)
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    draw_ratio_variance(axes[0], d)
    draw_clip_fraction(axes[1], d)
    _legend_below(fig, axes, ncol=3)
    return fig


@_register("moe_churn", "MoE routing churn per refresh interval",
           "Tiny mixture-of-experts transformer (4 experts, top-2) trained with GRPO without routing replay on the "
           "pattern task (Adam 3e-3, setup of paper_repro/moe_routing.py). Routing churn: share of routing decisions "
           "whose expert set differs between the sampling policy and the current router. Left: by window position j "
           "(zero right after a refresh, growing with staleness); right: its window mean against T. Error bars 2 s.e. "
           "over seeds.")
def _moe_churn(quick: bool) -> Figure:
    from gspo_dynamics.experiments import churn_data
    from gspo_dynamics.plots.figures._sequence import draw_churn_by_interval, draw_churn_by_position

    d = churn_data((1, 2, 4, 8), steps=48 if quick else 200, seeds=2 if quick else 4)
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    axes = fig.subplots(1, 2)
    draw_churn_by_position(axes[0], d)
    axes[0].legend(loc="upper left")
    draw_churn_by_interval(axes[1], d)
    return fig


# Diagnose panels on real logs (other people's runs in ../shared/data/real_logs, never shipped here; see
# `gspo_dynamics.real_logs`), drawn by `gspo_dynamics.plots.diagnose`; registered last; skipped with a
# note where the folder is absent. name -> (log file, what the run is).
DIAGNOSE_LOGS = {
    "diagnose_unsloth": ("IMJONEZZ__UnslothGRPO__outputs__checkpoint-250__trainer_state.json",
                         "Llama-3.1-8B-Instruct, G = 6, TRL trainer_state.json (IMJONEZZ/UnslothGRPO): rises and saturates"),
    "diagnose_gpt_oss": ("srinath-manda__IITD_Feb26_AAIPL__outputs__checkpoint-500__trainer_state.json",
                         "gpt-oss-20b LoRA, G = 4, TRL trainer_state.json (srinath-manda/IITD_Feb26_AAIPL): zero-std "
                         "groups climb, entropy falls"),
    "diagnose_wordle": ("alexchilton__CAS_NLP_MODULE4_GRPO__expert_guy__post_training_project__threestage__stage2_output__"
                        "checkpoint-160__trainer_state.json",
                        "Qwen2.5 after SFT, G = 2, Wordle, TRL trainer_state.json (alexchilton/CAS_NLP_MODULE4_GRPO): "
                        "reward oscillates, most groups without signal"),
    "diagnose_qwen9b": ("Sunshine535__nips-grpo-dynamics__results__gates_1_2__logs__gate2_rho1.00_seed42.log",
                        "Qwen3.5-9B LoRA, G = 4, console log (Sunshine535/nips-grpo-dynamics)"),
}


def _diagnose_figure(log_name: str):
    def make(quick: bool) -> Figure:  # a real log: nothing to simulate, quick and full are the same
        from gspo_dynamics.diagnose import diagnose
        from gspo_dynamics.logs import read_log
        from gspo_dynamics.plots.diagnose import diagnosis_figure
        from gspo_dynamics.real_logs import real_logs_dir, real_logs_missing_reason

        folder = real_logs_dir()
        if folder is None:
            raise FigureSkipped(real_logs_missing_reason())
        if not (folder / log_name).is_file():
            raise FigureSkipped(f"{log_name} is not in {folder}")
        return diagnosis_figure(diagnose(read_log(folder / log_name)))
    return make


@_register("predict_map", "Before a run: what a TRL config alone says about stability",
           "`gspo-dynamics predict --config examples/trl_grpo_config.yaml --plot map.png`: the TRL GRPOConfig read into the "
           "theory's terms (T = steps_per_generation x num_iterations / gradient_accumulation_steps = 4, Adam's b1 = 0.9 "
           "as the momentum; the T axis names those keys). Line: the largest stiffness per step eta K at which each "
           "refresh interval T is stable (exact discrete monodromy, all forces stale); shaded: unstable; dashed: the "
           "config's T. eta K is learning_rate times the model's and the task's curvature, which the config does not "
           "fix: without a pilot the learning_rate scale is not identified (the x axis says so); a pilot log measures "
           "the curvature (`--pilot`), and the map is then over learning_rate (predict_pilot_map).")
def _predict_map(quick: bool) -> Figure:
    from gspo_dynamics.plots.stability_map import stability_map_figure
    from gspo_dynamics.predict import config_forecast, read_run_config

    if not TRL_EXAMPLE.is_file():
        raise ConfigError(f"the predict_map figure needs the example config {TRL_EXAMPLE} (a source checkout)")
    return stability_map_figure(config_forecast(read_run_config(TRL_EXAMPLE)))


@_register("predict_pilot_map", "Before a run: what a 40-step pilot says over (lr, T)",
           "`gspo-dynamics train --task pattern --model 100k --objective gspo --steps 40 --steps-per-generation 2 --out "
           "out/pilot_T2`, then `gspo-dynamics predict --config out/pilot_T2/config.json --pilot "
           "out/pilot_T2/trainer_state.json --plot map.png` (the README's pilot, trained afresh for the figure: a few "
           "seconds on 2 CPU cores). Left, over the config's own keys, the learning rate `lr` and the refresh interval "
           "T = steps_per_generation x num_iterations: hatched, the collapse model's risk "
           "(the displacement between samplers past its limit, theory.collapse); dotted, where the chance that one run "
           "loses its reward crosses 10%, 50% and 90% (predict._fall_chance); shaded where the linear model calls a cell "
           "unstable, edged by the exact discrete bound x_max(T) converted to lr by the pilot's stiffness per unit lr "
           "(eta K on a top axis), here withheld with its reason (a 40-step pilot of a still-rising reward does not "
           "identify the stiffness); the point, the config at its lr and T. Right: the pilot's rewards, the fitted curve "
           "and its noise band.")
def _predict_pilot_map(quick: bool) -> Figure:
    import tempfile

    from gspo_dynamics.predict import pilot_forecast
    from gspo_dynamics.logs import read_log
    from gspo_dynamics.plots.stability_map import stability_map_figure
    from gspo_dynamics.predict import read_run_config
    from gspo_dynamics.train.config import TrainConfig
    from gspo_dynamics.train.trainer import train

    config = TrainConfig(task="pattern", model="100k", objective="gspo", steps=40, steps_per_generation=2, device="cpu")
    with tempfile.TemporaryDirectory() as folder:  # read back from the run's own files, as `predict` reads them
        train(config, folder)
        forecast = pilot_forecast(read_run_config(Path(folder) / "config.json"), read_log(Path(folder) / "trainer_state.json"))
    return stability_map_figure(forecast)


def _register_diagnose() -> None:
    import importlib.util

    if importlib.util.find_spec("gspo_dynamics.plots.diagnose") is None:  # not built yet: no entries
        return
    for name, (log_name, run) in DIAGNOSE_LOGS.items():
        _register(name, f"Diagnosis of a real run: {run.split(',')[0]}",
                  f"`gspo-dynamics diagnose` panels on a real training log from a public repository ({run}; "
                  f"../shared/data/real_logs/{log_name}, not shipped with this repository): reward with the closed-form fit and its regime, the zero-std "
                  "group fraction against p^G + (1 - p)^G, entropy, KL to the reference, completion length, and the "
                  "verdicts. No hyperparameters are given, so the checks that need them say so.")(_diagnose_figure(log_name))


_register_diagnose()
