"""A labelled corpus of real trainer runs: one recipe per failure mode, each a physical cause.

    entries = generate_trainer_corpus("corpus/", modes=RECIPES, seeds=3, base_seed=0)
    entries[0].mode, entries[0].path (trainer_state.json), entries[0].config (TrainConfig)

Every log is a `train` run of the 100k-parameter model on a sequence task (CPU, seconds each);
the label is the recipe that generated it, fixed before any diagnosis. Nothing is drawn by hand.
The recipes change only what causes the mode; the rest is the trainer's defaults (GRPO, AdamW,
G = 8, N = 4 prompts per step, a 50-step supervised warm-up to a success rate in (0.2, 0.8)):

  healthy_saturation     pattern task, lr 5e-4, KL weight beta = 1 to the post-warm-up policy,
                         N = 8: the reward rises and settles where the reward gain balances the
                         KL pull (p* ~ 0.5, entropy held up by the KL), run for 120 steps
  still_rising           the same configuration stopped after 40 steps, inside the rise
  stalled                the same prompts and N = 8 at lr 1e-5: the update per step is ~1/50 of
                         healthy's, the groups stay mixed (success ~0.25), the reward does not move
  policy_concentration   pattern task, lr 1e-3 (2x healthy's), no KL: nothing holds the policy near
                         its start and its token entropy collapses (~0.7 -> ~0.07 nats) as it locks
                         onto one answer (at lr 3e-3 two of three seeds instead crashed to reward 0)
  advantage_degeneracy   addition with 2-digit operands, a task the 50-step warm-up leaves at a
                         success rate of a few percent: with G = 8 most groups are all-zero
                         (p^G + (1-p)^G ~ 1), their advantages vanish and nothing is learned
  dynamical_instability  the uncorrected objective ("pg": gradient at the sampling policy) with
                         num_iterations = 8, i.e. T = 8 optimizer steps on one stale rollout, lr 1e-3:
                         the same lr at T = 1 learns the task (reward 0.25 -> 0.9); at T = 8 the stale
                         steps overshoot and the reward crashes to 0 after the first rollout and stays
                         there (a divergence, not a cycle: at lr 3e-4 one seed swung 0.03-0.44
                         between rollouts, one crashed, one recovered; none gave a clean oscillation)
  noise_dominated        one prompt and G = 4 per step (4 samples), lr 3e-4: the drift over 100
                         steps is comparable to the per-step sampling noise sqrt(p(1-p)/4) ~ 0.2

reward_hacking is left out: the tasks' rewards are exact (no proxy to exploit), so the trainer
cannot produce it by its cause.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.train.config import TrainConfig

MODEL = "100k"  # the smallest preset: a corpus run takes seconds on one CPU core
LABEL_NAME = "label.json"  # the recipe's label, written before the run (mode, note, config)


@dataclass(frozen=True)
class Recipe:
    """One mode's cause: `TrainConfig` overrides on top of the trainer's defaults, and why."""

    mode: str
    overrides: dict[str, Any]
    note: str


_SLOW_RISE = {"task": "pattern", "lr": 5e-4, "kl_coef": 1.0, "prompts_per_step": 8}
RECIPES: dict[str, Recipe] = {r.mode: r for r in (
    Recipe("healthy_saturation", {**_SLOW_RISE, "steps": 120},
           "lr 5e-4, KL beta 1, N 8, 120 steps: settles at the KL-balanced plateau"),
    Recipe("still_rising", {**_SLOW_RISE, "steps": 40}, "healthy's configuration stopped at 40 steps, inside the rise"),
    Recipe("stalled", {**_SLOW_RISE, "kl_coef": 0.0, "lr": 1e-5, "steps": 80}, "lr 1e-5 (50x smaller), groups mixed"),
    Recipe("policy_concentration", {"task": "pattern", "lr": 1e-3, "kl_coef": 0.0, "steps": 100},
           "lr 1e-3, no KL: token entropy collapses"),
    Recipe("advantage_degeneracy", {"task": "addition", "task_options": {"n_digits": 2}, "lr": 3e-3, "steps": 60},
           "2-digit addition, warm-up leaves success ~1-5%: most groups all-zero"),
    Recipe("dynamical_instability", {"task": "pattern", "objective": "pg", "num_iterations": 8, "lr": 1e-3, "steps": 96},
           "uncorrected pg, T = 8 steps per rollout, lr 1e-3 (learns at T = 1): stale steps overshoot"),
    Recipe("noise_dominated", {"task": "pattern", "group_size": 4, "prompts_per_step": 1, "lr": 3e-4, "steps": 100},
           "1 prompt x G 4 per step, lr 3e-4: drift ~ per-step noise"),
)}


def recipe_config(mode: str, seed: int = 0, **overrides) -> TrainConfig:
    """The TrainConfig of `mode`'s recipe with run seed `seed` (and any further overrides)."""
    if mode not in RECIPES:
        raise ConfigError(f"no trainer recipe for mode {mode!r}; recipes exist for {', '.join(RECIPES)}")
    values = {"model": MODEL, "objective": "grpo", "device": "cpu", **RECIPES[mode].overrides, "seed": seed, **overrides}
    return TrainConfig(**values)


@dataclass(frozen=True)
class CorpusEntry:
    """One generated run: its label (the recipe's mode), config and TRL-style log."""

    mode: str
    seed: int
    config: TrainConfig
    path: Path  # the run's trainer_state.json
    note: str
    warmup_success: float | None


def generate_trainer_corpus(out_dir, *, modes: Iterable[str] = tuple(RECIPES), seeds: int = 3, base_seed: int = 0,
                            on_run: Callable[[CorpusEntry, float], None] | None = None) -> list[CorpusEntry]:
    """Train every recipe of `modes` with run seeds base_seed, base_seed + 1, ... (`seeds` of them),
    each into out_dir/<mode>/seed<k>/ with its label.json written before the run.

    on_run(entry, seconds): called after each run (progress printing).
    """
    from gspo_dynamics.train.trainer import train  # torch-heavy; the recipes above need only the config

    positive_int("seeds", seeds)
    modes = list(modes)
    for mode in modes:
        recipe_config(mode)  # ConfigError for an unknown mode before any run
    out = Path(out_dir)
    entries = []
    for mode in modes:
        for k in range(seeds):
            seed = base_seed + k
            config = recipe_config(mode, seed)
            run_dir = out / mode / f"seed{seed}"
            run_dir.mkdir(parents=True, exist_ok=True)
            label = {"mode": mode, "note": RECIPES[mode].note, "config": dataclasses.asdict(config)}
            (run_dir / LABEL_NAME).write_text(json.dumps(label, indent=1))
            t0 = time.perf_counter()
            result = train(config, run_dir)
            entry = CorpusEntry(mode, seed, config, run_dir / "trainer_state.json", RECIPES[mode].note,
                                result.warmup_success)
            entries.append(entry)
            if on_run is not None:
                on_run(entry, time.perf_counter() - t0)
    return entries
