"""Write the labelled corpus: for every mode and seed, a TRL trainer_state.json and its label."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.sim.corpus._logged_bandit import run_logged
from gspo_dynamics.sim.corpus._modes import MODES, RECIPES, Variant
from gspo_dynamics.sim.corpus._trl_format import TRL_VERSION_WRITTEN, log_history, trainer_state, write_json
from gspo_dynamics.theory.hyperparams import Hyperparams

STEPS_PER_EPOCH = 1000  # nominal dataset size in optimizer steps: only sets the `epoch` column


@dataclass(frozen=True)
class CorpusEntry:
    """One generated log: where it is, its label, and how it was made."""

    path: Path  # the trainer_state.json
    mode: str  # the label, one of MODES
    seed: int
    label: dict  # what label.json holds (mode, seed, note, hyperparameters, task, facts)
    hparams: Hyperparams  # the generating configuration (also in label["hparams"])


def _hparams(variant: Variant) -> dict:
    hp = variant.hp
    out = {k: v for k, v in dataclasses.asdict(hp).items() if k != "optimizer"}
    out["optimizer"] = {"name": hp.optimizer.name, **dataclasses.asdict(hp.optimizer)}
    return out


def _label(mode: str, seed: int, variant: Variant) -> dict:
    task = variant.task
    return {
        "mode": mode,
        "seed": seed,
        "note": variant.note,
        "testbed": "bandit",
        "hparams": _hparams(variant),
        "task": {"prompts": task.num_prompts, "arms": task.num_arms, "rewards": task.rewards.tolist(),
                 "ref_logits": task.ref_logits.tolist()},
        "steps": variant.steps,
        "logging_steps": variant.logging_steps,
        "eval_every": variant.eval_every,
        "reward_components": list(variant.arms.component_names),
        "trl_keys": TRL_VERSION_WRITTEN,
        "facts": variant.facts,
    }


def generate_corpus(out_dir, *, seeds: int = 5, modes=MODES, seed: int = 0) -> list[CorpusEntry]:
    """Simulate `seeds` runs of every mode and write them under `out_dir`.

    Layout: out_dir/<mode>__seed<k>/trainer_state.json and .../label.json, and out_dir/labels.json
    (file -> label). Seed k of a mode with several variants (e.g. stalled: tiny lr, KL pinning)
    uses variant k mod (number of variants). Runs of one variant are batched over seeds.
    """
    positive_int("seeds", seeds)
    unknown = [m for m in modes if m not in RECIPES]
    if unknown:
        raise ConfigError(f"unknown mode(s) {unknown}; expected some of {', '.join(MODES)}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tensors of a few hundred entries: extra threads only add contention
    try:
        return _generate(Path(out_dir), seeds, modes, seed)
    finally:
        torch.set_num_threads(threads)


def _generate(out: Path, seeds: int, modes, seed: int) -> list[CorpusEntry]:
    entries: list[CorpusEntry] = []
    for mode in modes:
        variants = RECIPES[mode]()
        for v_index, variant in enumerate(variants):
            own = [k for k in range(seeds) if k % len(variants) == v_index]
            if not own:
                continue
            started = time.perf_counter()
            metrics, evals = run_logged(variant.task, variant.hp, variant.arms, steps=variant.steps,
                                        seeds=len(own), seed=seed + 1009 * v_index, eval_every=variant.eval_every)
            runtime = max(time.perf_counter() - started, 1e-3) / len(own)
            samples = variant.task.num_prompts * variant.hp.group_size * variant.hp.num_groups
            for i, k in enumerate(own):
                history = log_history(metrics, evals, i, logging_steps=variant.logging_steps,
                                      learning_rate=variant.hp.lr, samples_per_step=samples,
                                      steps_per_epoch=STEPS_PER_EPOCH, runtime_s=runtime)
                state = trainer_state(history, steps=variant.steps, logging_steps=variant.logging_steps,
                                      eval_steps=variant.eval_every, batch_size=samples,
                                      steps_per_epoch=STEPS_PER_EPOCH)
                run_dir = out / f"{mode}__seed{k}"
                write_json(run_dir / "trainer_state.json", state)
                label = _label(mode, k, variant)
                write_json(run_dir / "label.json", label)
                entries.append(CorpusEntry(run_dir / "trainer_state.json", mode, k, label, variant.hp))
    write_json(out / "labels.json", {str(e.path.relative_to(out)): e.label for e in entries})
    return entries
