"""The config keys a user edits for each of the theory's settings, in their framework's names.

`predict` answers in the config's own keys: a learning rate is TRL's `learning_rate`, verl's
`actor_rollout_ref.actor.optim.lr`, our trainer's `lr`. The refresh interval T is not one key but a
ratio of several, so each framework's `ConfigKeys` holds the one key it changes and the others fixed:

    TRL       T = steps_per_generation x num_iterations / gradient_accumulation_steps
              -> steps_per_generation = T x gradient_accumulation_steps / num_iterations
    verl      T = ppo_epochs x data.train_batch_size / ppo_mini_batch_size
              -> ppo_mini_batch_size = ppo_epochs x data.train_batch_size / T
    ours      T = steps_per_generation x num_iterations
              -> steps_per_generation = T / num_iterations
    OpenRLHF  T = max_epochs x rollout_batch_size x n_samples_per_prompt / train_batch_size
              -> train_batch_size = max_epochs x rollout_batch_size x n_samples_per_prompt / T

A T that no integer value of the key reaches is said so (None), never rounded silently. The passes over a rollout
(TRL num_iterations, verl ppo_epochs, ours num_iterations: `passes`) multiply T; `on_one_pass` gives the keys with
them set to 1, for a T below what the refresh key alone reaches (T = 1 at num_iterations 2 needs num_iterations 1).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

_VERL_ACTOR = "actor_rollout_ref.actor."


@dataclass(frozen=True, kw_only=True)
class ConfigKeys:
    """The keys behind lr, T, G and the run's length, and how T's key maps onto T (module docstring)."""

    framework: str  # "trl" | "verl" | "trainer" | "openrlhf"
    lr: str  # the learning rate's key
    group: str  # G's key
    refresh: str  # the key changed to set T
    refresh_factor: float  # T = factor x value (direct) or factor / value (inverse)
    refresh_inverse: bool  # verl: a larger mini-batch is a smaller T
    run_length: str  # the run's optimizer steps
    override: bool  # verl's keys are given as Hydra overrides (key=value), the others as YAML (key: value)
    passes: str = ""  # the key of the passes over a rollout, a factor of T
    passes_value: int = 1  # its value in the config
    doubling: str = ""  # the edit that doubles the responses per optimizer step at the same T, where doubling G does
    # not ("": G's key does; Search-R1's mini-batch holds ppo_mini_batch_size x rollout.n responses whatever n_agent)
    prompts_per_step: float = 0.0  # OpenRLHF: the prompts an optimizer step uses up, train_batch_size /
    # (n_samples_per_prompt x max_epochs): a run of n steps is --max_samples n x this (its max_steps is no argument)
    run_keys: tuple[str, str] = ("max_samples", "num_episodes")  # OpenRLHF's, as the config names them
    completions: tuple[tuple[str, int], ...] = ()  # (key, value) whose values, all scaled by f, scale a step's
    # completions by f at the same T where G's key does not (TRL: its batch counts completions); (): G's key does
    rollout: int = 0  # TRL: the completions of a rollout, its generation batch, which must hold whole groups of G
    eval_group: int = 0  # TRL: the G its eval batch holds whole groups of, where that is num_generations (0: no eval,
    # or num_generations_eval set): a change of G keeps it there (num_generations_eval), or TRL refuses the eval batch

    def __post_init__(self) -> None:
        if self.framework not in ("trl", "verl", "trainer", "openrlhf"):
            raise ValueError(f"framework must be trl, verl, trainer or openrlhf, got {self.framework!r}")
        if not self.refresh_factor > 0:
            raise ValueError(f"refresh_factor must be > 0, got {self.refresh_factor!r}")

    def refresh_value(self, T: int) -> int | None:
        """The integer value of `refresh` that gives T exactly, or None where none does (verl: nor where the mini-batch
        would outgrow the rollout, T below the passes over it)."""
        value = self.refresh_factor / T if self.refresh_inverse else T / self.refresh_factor
        if self.refresh_inverse and value > self.refresh_factor / self.passes_value * (1 + 1e-9):
            return None
        near = round(value)
        return int(near) if near >= 1 and math.isclose(value, near, rel_tol=1e-9) else None

    def more_completions(self, factor: float, group_size: int) -> tuple[float, tuple[tuple[str, int], ...]]:
        """(the factor reached, the (key, value) edits) that give an optimizer step at least `factor` times its
        completions at the same T: each of `completions` times ceil(factor) (one integer keeps their ratio, so T),
        else G's key at ceil(factor x `group_size`)."""
        if self.completions:
            whole = math.ceil(factor - 1e-9)
            return float(whole), tuple((k, v * whole) for k, v in self.completions)
        G = math.ceil(factor * group_size - 1e-9)
        return G / group_size, ((self.group, G),)

    def rollout_factor(self, group_size: int, new: int) -> int:
        """TRL: the least integer k by which the generation batch (`rollout`) grows for G = `new` to fill it with whole
        groups (TRL refuses it otherwise) and no fewer prompts than G = `group_size` did, rollout k / new >=
        rollout / group_size: the least multiple of new / gcd(rollout, new) at or above new / group_size. 1 elsewhere."""
        if not self.rollout:
            return 1
        whole = new // math.gcd(self.rollout, new)
        return whole * math.ceil(new / group_size / whole - 1e-12)

    def group_edits(self, group_size: int, new: int) -> tuple[tuple[str, int], ...] | None:
        """The (key, value) edits that set G to `new` at the same T, in a config the framework accepts: G's key, with
        TRL's `completions` times `rollout_factor` where it is above 1 and its eval groups kept (`eval_group`), and
        where G is a factor of T (OpenRLHF's n_samples_per_prompt, Search-R1's n_agent) the refresh key times
        new / group_size; None where no integer value of it keeps T."""
        edits = [(self.group, new)]
        k = self.rollout_factor(group_size, new)
        edits += [(key, value * k) for key, value in self.completions] if k > 1 else []
        edits += [("num_generations_eval", self.eval_group)] if self.eval_group and new != self.eval_group else []
        if self.framework == "openrlhf" or self.group.endswith("n_agent"):
            value = dict(self.completions)[self.refresh] * new / group_size
            if not math.isclose(value, round(value), rel_tol=1e-9):
                return None
            edits.append((self.refresh, int(round(value))))
        return tuple(edits)

    @property
    def rollout_prompts(self) -> float | None:
        """verl's prompts per rollout (data.train_batch_size x n_agent: T's factor over its passes), the unit its
        trainer.total_training_steps counts; None for the frameworks whose run length counts optimizer steps."""
        return self.refresh_factor / self.passes_value if self.framework == "verl" else None

    def on_one_pass(self) -> ConfigKeys:
        """The keys with the passes over a rollout set to 1: T's factor divided by the config's passes."""
        return dataclasses.replace(self, refresh_factor=self.refresh_factor / self.passes_value, passes_value=1)

    def setting(self, key: str, value) -> str:
        """`key: value` (a YAML config's line), `key=value` (verl's command-line override) or `--key value`
        (OpenRLHF's argument)."""
        text = f"{value:.3g}" if isinstance(value, float) else str(value)
        if self.framework == "openrlhf" and key == self.run_length and self.prompts_per_step:
            samples, episodes = self.run_keys
            return (f"--{samples} {math.ceil(value * self.prompts_per_step - 1e-9)} --{episodes} 1 ({text} optimizer "
                    "steps)")
        if self.framework == "openrlhf":
            return f"--{key} {text}"
        return f"{key}={text}" if self.override else f"{key}: {text}"


def evaluates(cfg: dict) -> bool:
    """Whether a TRL config evaluates with num_generations' groups (GRPOConfig checks the eval batch against them):
    an eval_strategy (evaluation_strategy before transformers 4.46) other than "no", num_generations_eval unset."""
    strategy = cfg.get("eval_strategy", cfg.get("evaluation_strategy"))
    return strategy not in (None, "no", "NO") and cfg.get("num_generations_eval") is None


def trl_keys(num_iterations: int, accumulation: int, generation: dict[str, int] | None = None,
             rollout: int = 0, eval_group: int = 0) -> ConfigKeys:
    """TRL's keys; `generation`: the config's steps_per_generation and / or generation_batch_size as given (none:
    steps_per_generation at its default, the accumulation), for the edit that doubles the responses per step at the
    same T; `rollout`: the generation batch, per_device_train_batch_size x processes x steps_per_generation (for
    `group_edits`). TRL's batch counts completions, so num_generations only regroups a step's
    per_device_train_batch_size x processes x gradient_accumulation_steps of them; doubling the accumulation with the
    rollout's size keeps T = steps_per_generation x num_iterations / gradient_accumulation_steps and the memory a
    micro-batch needs."""
    completions = (("gradient_accumulation_steps", accumulation),
                   *(generation or {"steps_per_generation": accumulation}).items())
    (first, a), *rest = ((k, 2 * v) for k, v in completions)
    doubling = (f"{first} {a} with " + " and ".join(f"{k} {v}" for k, v in rest)
                + " (T kept; num_generations only regroups a step's completions)")
    return ConfigKeys(framework="trl", lr="learning_rate", group="num_generations", refresh="steps_per_generation",
                      refresh_factor=num_iterations / accumulation, refresh_inverse=False, run_length="max_steps",
                      override=False, passes="num_iterations", passes_value=num_iterations, doubling=doubling,
                      completions=completions, rollout=rollout, eval_group=eval_group)


def verl_keys(ppo_epochs: int, train_batch_size: int, copies: int = 1,
              group: str = "actor_rollout_ref.rollout.n", mini: int | None = None) -> ConfigKeys:
    """verl's keys; `copies`, `group`: Search-R1's rollout.n_agent, each prompt's copies in a rollout, a factor of T,
    and the key of its group (`predict._verl.search_r1_group`); `mini`, its ppo_mini_batch_size, for the edit that
    doubles the responses per step there (`ConfigKeys.doubling`)."""
    own = not (group.endswith(".n") or mini is None)  # Search-R1: n_agent is no lever on a step's responses
    doubling = "" if not own else (
        f"data.train_batch_size={2 * train_batch_size} with {_VERL_ACTOR}ppo_mini_batch_size={2 * mini} (T kept; "
        "rollout.n_agent moves G and T, not the responses per step)")
    completions = (("data.train_batch_size", train_batch_size), (_VERL_ACTOR + "ppo_mini_batch_size", mini)) if own else ()
    return ConfigKeys(framework="verl", lr=_VERL_ACTOR + "optim.lr", group=group, doubling=doubling, completions=completions,
                      refresh=_VERL_ACTOR + "ppo_mini_batch_size",
                      refresh_factor=float(ppo_epochs * train_batch_size * copies),
                      refresh_inverse=True, run_length="trainer.total_training_steps", override=True,
                      passes=_VERL_ACTOR + "ppo_epochs", passes_value=ppo_epochs)


def openrlhf_keys(max_epochs: int, rollout_batch_size: int, group: int, train_batch_size: int,
                  name: dict[str, str]) -> ConfigKeys:
    """OpenRLHF's arguments (`predict._openrlhf`), each by `name` (its flat name -> the config's: dotted in a config of
    dotted names); the run's length is its trainer's max_steps, which no argument holds (`_openrlhf_fields.RUN_LENGTH`).
    n_samples_per_prompt moves T with G; the responses per step double with train_batch_size and rollout_batch_size
    together."""
    return ConfigKeys(framework="openrlhf", lr=name["actor_learning_rate"], group=name["n_samples_per_prompt"],
                      refresh=name["train_batch_size"], refresh_factor=float(max_epochs * rollout_batch_size * group),
                      refresh_inverse=True, run_length="max_steps", override=False, passes=name["max_epochs"],
                      passes_value=max_epochs, prompts_per_step=train_batch_size / (group * max_epochs),
                      run_keys=(name["max_samples"], name["num_episodes"]),
                      doubling=f"--{name['rollout_batch_size']} {2 * rollout_batch_size} with --{name['train_batch_size']} "
                               f"{2 * train_batch_size} (T kept; {name['n_samples_per_prompt']} moves G and T)",
                      completions=((name["rollout_batch_size"], rollout_batch_size),
                                   (name["train_batch_size"], train_batch_size)))


def trainer_keys(num_iterations: int) -> ConfigKeys:
    return ConfigKeys(framework="trainer", lr="lr", group="group_size", refresh="steps_per_generation",
                      refresh_factor=float(num_iterations), refresh_inverse=False, run_length="steps", override=False,
                      passes="num_iterations", passes_value=num_iterations)


# what each framework must log for a pilot to measure the stiffness, the noise, the drift and the collapse limit
PILOT_LOGGING = {
    "trl": "logging_steps: 1 (TRL averages a row over logging_steps); TRL then logs reward, reward_std, "
           "frac_reward_zero_std, entropy (TRL >= 0.20), clip_ratio/* and, with beta > 0, kl",
    "verl": "trainer.logger=[console,file] (or tensorboard) so each step's metrics are kept: critic/score/mean, "
            "actor/entropy, actor/pg_clipfrac, actor/ppo_kl, response_length/clip_ratio",
    "openrlhf": "--logging_steps 1 with --use_wandb or --use_tensorboard: OpenRLHF then logs reward, "
                "group_reward_std, ppo_clip_ratio, entropy_loss (its entropy) and, with an init_kl_coef, kl",
    "trainer": "our trainer logs every step (reward, entropy, clip ratios, KL) to trainer_state.json",
}
