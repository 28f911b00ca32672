"""Write the contextual family: for every mode and run index, one log file and its label."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.corpus import CorpusEntry
from gspo_dynamics.sim.corpus._trl_format import TRL_VERSION_WRITTEN, write_json
from gspo_dynamics.sim.corpus_contextual._engine import run_contextual
from gspo_dynamics.sim.corpus_contextual._formats import (
    FILE_NAMES, trl_rows, write_trl, write_verl_jsonl, write_wandb_csv,
)
from gspo_dynamics.sim.corpus_contextual._recipes import MODES, RECIPES, SMOOTH, Recipe
from gspo_dynamics.sim.corpus_contextual._task import softmax

MAX_DRAWS = 20  # redraws of a recipe whose run did not show its physics; more means the recipe is broken
MIN_ROWS = 40  # logged rows a run keeps at least (logging_steps is drawn among those that allow it)
EVAL_SHARE = 0.5  # share of runs (outside reward_hacking) that log eval rows
OTHER_FORMAT_SHARE = 0.15  # share of runs written as a W&B CSV export, and again as verl JSONL
NO_VERL = ("advantage_degeneracy", "reward_hacking")  # their evidence (zero-std groups, eval/reward) has no verl key
# optional TRL series and the chance that a run does not log them (older TRL, custom logging)
OPTIONAL = {"clip_ratio/": 0.3, "completions/m": 0.3, "entropy": 0.15, "rewards/": 0.2}
ESSENTIAL = {"policy_concentration": ("entropy",), "reward_hacking": ("rewards/",)}  # a mode's physics stays logged
LENGTH_EXTREMES = ("completions/min_length", "completions/max_length", "completions/mean_terminated_length")


def generate_contextual_corpus(out_dir, *, seeds: int = 5, seed: int = 0, modes=MODES) -> list[CorpusEntry]:
    """Simulate `seeds` runs of every mode of the contextual family and write them under `out_dir`.

    Layout: out_dir/<mode>__seed<k>/<trainer_state.json | metrics.csv | metrics.jsonl> and .../label.json,
    and out_dir/labels.json (file -> label). Run k of a mode draws its size, hyperparameters, length,
    logging interval, format and optional series from a generator seeded by (seed, mode, k), so the
    same arguments write the same files.
    """
    positive_int("seeds", seeds)
    unknown = [m for m in modes if m not in RECIPES]
    if unknown:
        raise ConfigError(f"unknown mode(s) {unknown}; expected some of {', '.join(MODES)}")
    out = Path(out_dir)
    entries = [_one(out, mode, k, seed) for mode in modes for k in range(seeds)]
    write_json(out / "labels.json", {str(e.path.relative_to(out)): e.label for e in entries})
    return entries


def _draw(mode: str, k: int, rng: np.random.Generator) -> tuple[Recipe, int, tuple, int]:
    """Draw the recipe until its run shows the recipe's physics: (recipe, steps kept, run output, draws)."""
    for draws in range(1, MAX_DRAWS + 1):
        recipe = RECIPES[mode](rng, k)
        run = recipe.run
        if run.eval_every is None and rng.random() < EVAL_SHARE:
            run = dataclasses.replace(run, eval_every=int(max(run.steps // rng.integers(8, 16), 1)))
            recipe = dataclasses.replace(recipe, run=run)
        output = run_contextual(recipe.task, run, int(rng.integers(1 << 31)))
        kept = recipe.keep(output[2])
        if kept is not None:
            return recipe, kept, output, draws
    raise RuntimeError(f"the {mode} recipe did not show its physics in {MAX_DRAWS} draws (run {k})")


def _one(out: Path, mode: str, k: int, seed: int) -> CorpusEntry:
    rng = np.random.default_rng([seed, MODES.index(mode), k])
    recipe, n, (metrics, evals, full), draws = _draw(mode, k, rng)
    metrics = {name: v[:n] for name, v in metrics.items()}
    evals = {s: e for s, e in evals.items() if s <= n}
    truth = {name: v[:n] for name, v in full.items()}
    run = dataclasses.replace(recipe.run, steps=n, warmup_steps=min(recipe.run.warmup_steps, n - 1))
    fmt = _format(mode, rng)
    choices = [c for c in recipe.logging_choices if n // c >= MIN_ROWS] or [min(recipe.logging_choices)]
    logging_steps = 1 if fmt == "verl_jsonl" else int(rng.choice(choices))
    dropped = [prefix for prefix, p in OPTIONAL.items() if rng.random() < p and prefix not in ESSENTIAL.get(mode, ())]
    logged = {name: v for name, v in metrics.items() if not _dropped(name, dropped)}
    run_dir = out / f"{mode}__seed{k}"
    path = run_dir / FILE_NAMES[fmt]
    samples = min(run.hp.num_groups, recipe.task.shape[0]) * run.hp.group_size
    if fmt == "verl_jsonl":
        write_verl_jsonl(path, logged, evals, run)
    else:
        rows = trl_rows(logged, evals, run, logging_steps=logging_steps, samples_per_step=samples)
        if fmt == "trl_state":
            write_trl(path, rows, steps=n, logging_steps=logging_steps, eval_every=run.eval_every, batch_size=samples)
        else:
            write_wandb_csv(path, rows)
    label = _label(mode, k, recipe, run, fmt, logging_steps, dropped, draws, metrics, truth, full)
    write_json(run_dir / "label.json", label)
    return CorpusEntry(path, mode, k, label, run.hp)


def _format(mode: str, rng: np.random.Generator) -> str:
    u = rng.random()
    if u < OTHER_FORMAT_SHARE:
        return "wandb_csv"
    if u < 2 * OTHER_FORMAT_SHARE and mode not in NO_VERL:
        return "verl_jsonl"
    return "trl_state"


def _dropped(name: str, dropped: list[str]) -> bool:
    for prefix in dropped:
        if prefix == "completions/m" and name in LENGTH_EXTREMES:
            return True
        if prefix != "completions/m" and name.startswith(prefix):
            return True
    return False


def _hparams(run) -> dict:
    hp = run.hp
    out = {k: v for k, v in dataclasses.asdict(hp).items() if k != "optimizer"}
    out["optimizer"] = {"name": hp.optimizer.name, **dataclasses.asdict(hp.optimizer)}
    return out


def dominant_period(x: np.ndarray) -> float:
    """Period (steps) of the largest periodogram peak of x minus its mean (0 for a constant x)."""
    power = np.abs(np.fft.rfft(x - x.mean()))[1:] ** 2
    return float(x.size / (1 + int(power.argmax()))) if power.any() else 0.0


def _facts(metrics: dict, truth: dict, full: dict, recipe: Recipe) -> dict:
    """Noise-free numbers of the logged run (what the recipe's physics is stated in), a few measured
    ones, and where the simulated run went after the log stops (`full`: the whole horizon)."""
    R, Rt, H = truth["expected_reward"], truth["expected_true_reward"], truth["policy_entropy"]
    smooth = np.convolve(R, np.ones(SMOOTH) / SMOOTH, "valid") if R.size > SMOOTH else R
    tail = R[R.size // 4:]  # past the initial transient
    task = recipe.task
    return {
        "reward_start": R[0], "reward_end": R[-1], "reward_peak": smooth.max(), "reward_ceiling": task.ceiling(),
        "true_reward_start": Rt[0], "true_reward_peak": Rt.max(), "true_reward_end": Rt[-1],
        "true_reward_ceiling": task.ceiling(task.true_reward),
        "entropy_start": H[0], "entropy_end": H[-1],
        "frac_zero_std_mean": metrics["frac_reward_zero_std"].mean(),
        "period_of_reward": dominant_period(tail), "refresh_interval": recipe.run.hp.refresh_interval,
        "reference_reward": float((softmax(task.ref_logits) * task.reward).sum(-1).mean()),
        "horizon_steps": full["expected_reward"].size,
        "reward_at_horizon": full["expected_reward"][-max(full["expected_reward"].size // 10, 1):].mean(),
    }


def _label(mode, k, recipe: Recipe, run, fmt, logging_steps, dropped, draws, metrics, truth, full) -> dict:
    task = recipe.task
    P, K = task.shape
    return {
        "mode": mode, "seed": k, "variant": recipe.variant, "note": recipe.note, "testbed": "contextual",
        "format": fmt, "hparams": _hparams(run),
        "run": {"prompts_per_step": min(run.hp.num_groups, P), "steps": run.steps, "warmup_steps": run.warmup_steps,
                "kl_in_reward": run.kl_in_reward, "eval_every": run.eval_every},
        "task": {"prompts": P, "actions": K, "shared_rank": int(task.features.shape[1]), "tabular": task.tabular,
                 "reward_components": list(task.component_names), "reward_weights": task.weights.tolist()},
        "steps": run.steps, "logging_steps": logging_steps, "eval_every": run.eval_every,
        "series_not_logged": dropped, "draws": draws,
        "trl_keys": TRL_VERSION_WRITTEN if fmt != "verl_jsonl" else None,
        "facts": {name: float(v) for name, v in _facts(metrics, truth, full, recipe).items()},
    }
