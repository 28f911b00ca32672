"""A labelled log family written by TRL's own GRPOTrainer: one recipe per failure mode, each a physical cause.

Every run is TRL's `GRPOTrainer` (trl 1.16) on a tiny Llama built in code (`train.hf_tiny`: hidden 64, 2
layers, ~0.1M parameters, seed = the run's seed, never downloaded) and our character tokenizer, on one of
our sequence tasks (`train.tasks`) scored by its exact reward. A supervised warm-up (`train.warmup`) first
brings the model to a success rate inside the recipe's band; the warmed model is saved to a temporary
folder and handed to TRL by path (so that with beta > 0 TRL loads it again as the KL reference). TRL then
trains with logging_steps = 1, log_completions off, report_to none, on the CPU; its `trainer_state.json`
(`log_history` in TRL's own keys) is kept, nothing else (no weights, no optimizer state). The label
(`label.json`: mode, recipe, seed, note) is written before the run.

Defaults (what a recipe does not change): pattern task (8 tokens + EOS, reward 1 for the exact pattern),
warm-up to a success rate in (0.2, 0.5), G = num_generations = 8, N = 8 prompts per step
(per_device_train_batch_size = N G), beta = 0, GRPO loss (loss_type "grpo"), epsilon 0.2, constant lr,
on-policy (steps_per_generation = num_iterations = 1).

  healthy_saturation     lr 1e-3, beta 1 (KL to the warmed model), 200 steps: the reward rises (~0.4 -> ~0.7)
                         and settles where the reward gain balances the KL pull, entropy held up by the KL
  still_rising           the same configuration stopped after 30 steps, inside the rise
  stalled                lr 2e-6, N 8 x G 8, 120 steps: Adam's steps ~lr, the policy does not move; the groups
                         stay mixed (success ~0.3) and the per-step noise is low (64 samples)
  noise_dominated        one prompt x G 2 per step (2 samples), lr 5e-5, 120 steps: what drift there is hides
                         under the per-step sampling noise sqrt(p(1-p)/2) ~ 0.3
  policy_concentration   pattern with partial credit (matched fraction), warm-up to (0.3, 0.6), lr 5e-3,
                         beta 0: nothing holds the policy near its start, it locks onto one answer that is
                         partly right and its entropy collapses with the reward below 1
  advantage_degeneracy   3-digit addition, warm-up stopped at a success rate of a few percent (band
                         (0.01, 0.1)): with G = 8 nearly every group is all-zero, their advantages vanish
  dynamical_instability  lr 1.5e-3 with steps_per_generation 8 (8 optimizer steps on one rollout, the later
                         ones stale), epsilon 10 (the clip far away), 400 steps = 50 rollouts: the reward
                         rises, then the stale steps overshoot and it collapses (at lr 3e-3 it crashed within
                         the first rollouts, with no rise to see)
  reward_hacking         two reward functions: the pattern's exactness ("correct", which needs <= 8 tokens)
                         and a cheap length reward ("length", tokens / 17, the completion budget doubled to
                         17, weight 2), lr 2e-4: writing longer is exploited while correctness falls to 0;
                         an eval set every 10 steps scores correctness only (the length reward returns None
                         there), so eval_reward falls while the train reward rises

    python paper_repro/trl_family.py [--modes a,b] [--seeds 0,1] [--out DIR]   # the committed family
    python paper_repro/trl_family.py --quick --no-record                        # one short run, temp dir

Needs trl, transformers, datasets (the benchmark extra); reading the committed logs does not.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

DATA = Path(__file__).parent / "data" / "trl_family"
LABEL_NAME, STATE_NAME, RUN_NAME = "label.json", "trainer_state.json", "run.json"
SEEDS = (0, 1)
WARMUP_LR, WARMUP_BATCH, WARMUP_STEPS = 3e-3, 32, 600  # the supervised warm-up (AdamW), stopping inside the band
EVAL_PROMPTS = 8  # prompts of the eval set (x G completions each), where a recipe has one


def correct_reward(task, tok):
    """The task's exact reward of each completion (TRL's reward-function call)."""

    def correct(prompts, completions, completion_ids, **_):
        texts = [tok.decode(torch.tensor(ids)) for ids in completion_ids]
        return task.reward(list(prompts), texts).tolist()

    return correct


def length_reward(task, tok, budget: int):
    """Completion tokens / budget in [0, 1]: a format reward a policy earns by writing longer. None on the eval
    set (rows whose `split` is "eval"), so that eval_reward is correctness alone."""

    def length(prompts, completions, completion_ids, split=None, **_):
        split = split or ["train"] * len(completion_ids)
        return [None if s == "eval" else len(ids) / budget for ids, s in zip(completion_ids, split)]

    return length


REWARDS = {"correct": correct_reward, "length": length_reward}


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """One mode's cause: the task, the warm-up band and GRPOConfig overrides on top of DEFAULTS, and why."""

    mode: str
    note: str
    task: str = "pattern"  # a train.tasks name
    task_options: dict[str, Any] = field(default_factory=dict)  # its difficulty knobs
    warmup_band: tuple[float, float] = (0.2, 0.5)  # success rate the supervised warm-up stops inside
    prompts_per_step: int = 8  # N, prompts per optimizer step (per_device_train_batch_size = N G)
    rewards: tuple[str, ...] = ("correct",)  # reward functions (REWARDS), summed with reward_weights
    extra_length: int = 0  # completion budget beyond the task's own (room for a length exploit)
    eval_every: int = 0  # steps between evaluations on an eval set (0: none)
    grpo: dict[str, Any] = field(default_factory=dict)  # GRPOConfig overrides

    def __post_init__(self):
        unknown = set(self.rewards) - set(REWARDS)
        if unknown:
            raise ValueError(f"unknown reward function(s) {sorted(unknown)}; valid names are {', '.join(REWARDS)}")
        if not 0.0 <= self.warmup_band[0] < self.warmup_band[1] <= 1.0:
            raise ValueError(f"warmup_band must be (low, high) in [0, 1], got {self.warmup_band}")


# GRPOConfig values every recipe shares (a recipe's `grpo` overrides them)
DEFAULTS = dict(num_generations=8, learning_rate=1e-3, beta=0.0, loss_type="grpo", epsilon=0.2, temperature=1.0,
                max_steps=120, lr_scheduler_type="constant", warmup_steps=0, max_grad_norm=1.0,
                gradient_accumulation_steps=1, gradient_checkpointing=False, logging_steps=1, log_completions=False,
                report_to="none", save_strategy="no", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0)
_HEALTHY = {"learning_rate": 1e-3, "beta": 1.0}
RECIPES: dict[str, Recipe] = {r.mode: r for r in (
    Recipe(mode="healthy_saturation", grpo={**_HEALTHY, "max_steps": 200},
           note="lr 1e-3, beta 1 to the warmed model, 200 steps: settles where the reward gain balances the KL pull"),
    Recipe(mode="still_rising", grpo={**_HEALTHY, "max_steps": 30},
           note="healthy's configuration stopped after 30 steps, inside the rise"),
    Recipe(mode="stalled", grpo={"learning_rate": 2e-6, "max_steps": 120},
           note="lr 2e-6 with N 8 x G 8: the policy does not move, groups mixed, low per-step noise"),
    Recipe(mode="noise_dominated", prompts_per_step=1, grpo={"num_generations": 2, "learning_rate": 5e-5, "max_steps": 120},
           note="1 prompt x G 2 per step, lr 5e-5: any drift is under the per-step sampling noise"),
    Recipe(mode="policy_concentration", task_options={"partial_credit": True}, warmup_band=(0.3, 0.6),
           grpo={"learning_rate": 5e-3, "max_steps": 120},
           note="partial credit, lr 5e-3, beta 0: locks onto one partly right answer, entropy collapses below 1"),
    Recipe(mode="advantage_degeneracy", task="addition", task_options={"n_digits": 3}, warmup_band=(0.01, 0.1),
           grpo={"learning_rate": 1e-3, "max_steps": 100},
           note="3-digit addition warmed to a few percent success: most groups of 8 all-zero, no advantage"),
    Recipe(mode="dynamical_instability",
           grpo={"learning_rate": 1.5e-3, "steps_per_generation": 8, "epsilon": 10.0, "max_steps": 400},
           note="lr 1.5e-3, steps_per_generation 8 (8 optimizer steps per rollout), clip off: stale steps overshoot"),
    Recipe(mode="reward_hacking", rewards=("correct", "length"), extra_length=8, eval_every=10,
           grpo={"reward_weights": [1.0, 2.0], "learning_rate": 2e-4, "max_steps": 150},
           note="correctness + a cheap length reward (weight 2): length exploited, correctness and eval fall"),
)}


def run(recipe: Recipe, seed: int, run_dir: Path, max_steps: int | None = None) -> dict[str, float]:
    """Warm up, train with TRL, keep trainer_state.json in run_dir (label.json written first); returns
    {"warmup_success", "wall_s"} (also written to run.json)."""
    from datasets import Dataset
    from transformers import PrinterCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    from gspo_dynamics.train import Tokenizer, make_task, supervised_warmup
    from gspo_dynamics.train.hf import HFCausalLM
    from gspo_dynamics.train.hf_tiny import hf_model, hf_tokenizer

    hf_logging.set_verbosity_error()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LABEL_NAME).write_text(json.dumps({"mode": recipe.mode, "recipe": _recipe_json(recipe), "seed": seed,
                                                  "note": recipe.note}, indent=1) + "\n")
    t0 = time.perf_counter()
    torch.set_num_threads(1)
    tok = Tokenizer()
    task = make_task(recipe.task, tok, **recipe.task_options)
    budget = task.max_new_tokens + recipe.extra_length
    model = hf_model(tok, max_len=64, seed=seed)  # positions: prompt + completion fit easily
    generator = torch.Generator().manual_seed(seed)
    success = supervised_warmup(HFCausalLM(model), task, tok, steps=WARMUP_STEPS, lr=WARMUP_LR, batch_size=WARMUP_BATCH,
                                generator=generator, target_success=recipe.warmup_band)
    grpo = {**DEFAULTS, **recipe.grpo, **({"max_steps": max_steps} if max_steps else {})}
    G, N = grpo["num_generations"], recipe.prompts_per_step
    n_prompts = N * grpo["max_steps"]  # enough for every step (TRL starts a new epoch if a recipe reuses rollouts)
    train = Dataset.from_dict({"prompt": task.sample_prompts(n_prompts, generator), "split": ["train"] * n_prompts})
    evals = {}
    if recipe.eval_every:
        evals = dict(eval_strategy="steps", eval_steps=recipe.eval_every, per_device_eval_batch_size=EVAL_PROMPTS * G)
        evals_data = Dataset.from_dict({"prompt": task.sample_prompts(EVAL_PROMPTS, generator), "split": ["eval"] * EVAL_PROMPTS})
    rewards = [REWARDS[name](task, tok) if name == "correct" else REWARDS[name](task, tok, budget) for name in recipe.rewards]
    with tempfile.TemporaryDirectory(prefix="trl_family_") as tmp:
        model.save_pretrained(f"{tmp}/init")  # TRL loads it by path (and again as the KL reference when beta > 0)
        args = GRPOConfig(output_dir=f"{tmp}/out", per_device_train_batch_size=N * G, max_completion_length=budget,
                          seed=seed, **grpo, **evals)
        trainer = GRPOTrainer(model=f"{tmp}/init", reward_funcs=rewards, args=args, train_dataset=train,
                              eval_dataset=evals_data if recipe.eval_every else None, processing_class=hf_tokenizer(tok))
        trainer.remove_callback(PrinterCallback)  # the per-step dicts on stdout (the log keeps them)
        trainer.train()
        trainer.state.save_to_json(str(run_dir / STATE_NAME))
    info = {"warmup_success": success, "wall_s": round(time.perf_counter() - t0, 1), "trl": _version("trl"),
            "transformers": _version("transformers"), "torch": torch.__version__}
    (run_dir / RUN_NAME).write_text(json.dumps(info, indent=1) + "\n")
    return info


def _recipe_json(recipe: Recipe) -> dict:
    d = asdict(recipe)
    d["grpo"] = {**DEFAULTS, **recipe.grpo}
    d["warmup"] = {"lr": WARMUP_LR, "batch_size": WARMUP_BATCH, "max_steps": WARMUP_STEPS}
    return d


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def family(root: Path = DATA) -> list[tuple[str, Path]]:
    """[(label, trainer_state.json)] of the committed family (reads label.json; needs no TRL). A run whose label.json
    says "excluded" (its recipe's cause did not occur, judged from its curves before any diagnosis) is left out."""
    out = []
    for label_path in sorted(root.glob(f"*/{LABEL_NAME}")):
        state = label_path.parent / STATE_NAME
        label = json.loads(label_path.read_text())
        if state.exists() and "excluded" not in label:
            out.append((label["mode"], state))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(RECIPES), help="comma-separated modes")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated run seeds")
    parser.add_argument("--out", default=str(DATA), help="family folder: one <mode>-<seed>/ per run")
    parser.add_argument("--quick", action="store_true", help="one 10-step run of still_rising into a temporary folder")
    parser.add_argument("--no-record", action="store_true", help="accepted for the paper_repro harness; nothing is recorded")
    args = parser.parse_args()
    modes = args.modes.split(",")
    bad = [m for m in modes if m not in RECIPES]
    if bad:
        raise SystemExit(f"trl_family: unknown mode(s) {', '.join(bad)}; valid modes are {', '.join(RECIPES)}")
    if args.quick:
        with tempfile.TemporaryDirectory(prefix="trl_family_quick_") as tmp:
            info = run(RECIPES["still_rising"], 0, Path(tmp) / "still_rising-0", max_steps=10)
            rows = json.loads((Path(tmp) / "still_rising-0" / STATE_NAME).read_text())["log_history"]
            print(f"still_rising-0: {len(rows)} log rows written by TRL in {info['wall_s']:.0f} s (warm-up success "
                  f"{info['warmup_success']:.2f})")
        return
    for mode in modes:
        for seed in map(int, args.seeds.split(",")):
            run_dir = Path(args.out) / f"{mode}-{seed}"
            if run_dir.exists():
                shutil.rmtree(run_dir)
            info = run(RECIPES[mode], seed, run_dir)
            print(f"{mode}-{seed}: {info['wall_s']:.0f} s, warm-up success {info['warmup_success']:.2f}", flush=True)


if __name__ == "__main__":
    main()
