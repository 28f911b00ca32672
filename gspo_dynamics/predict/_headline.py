"""The answer `predict` gives first: a verdict, what to change in the config's own keys, and the forecast in the
reward's units. The derivations behind it stay in the forecast objects (`--explain`).

The verdict is decided by the first rule that applies, in this order (each names its evidence):

  unsafe                 the pilot lost reward it had and had not won it back by its end (`fit._fall`: a fall
                         of block means with z > 5 that matters in the reward's range, or of one row against the
                         rows' largest sampling noise, `predict._row_fall`; the held level below half its depth),
                         by a fall that clears the sampling noise of its rows too (`_pilot_headline.fall_in_row_noise`;
                         else at risk); or the policy's move between sampler refreshes D exceeds the collapse
                         limit, or the pilot's entropy overshot on its first updates (`theory.collapse` (6), read
                         from the entropy alone: at T = 1 too); or the config's lr exceeds the linear model's largest
                         stable lr, lr_max = lr x_max(T, mu) / kappa (`predict._pilot`);
  at risk                no band edge at T > 1 (below); or the pilot's fall came back above half its depth (a dip);
                         or D within AT_RISK_SHARE of the limit; or the chance that one run falls at the config's
                         (lr, T), `predict._fall_chance`, at least AT_RISK_CHANCE (neither of these two where the
                         pilot itself ran at D and held, `_fall_chance.ran_and_held`: the limit in force is then
                         its own D, and the chance there the threshold's by construction); or lr within a factor
                         MARGIN_FACTOR of lr_max; or the KL pull on a solved policy (`predict._collapse_risk`); or
                         the pilot's reward swings (a periodic component or an alternation of rows: the limit cycle
                         diagnose reports as dynamical instability, `_swing.reward_swings`) at confidence
                         SWING_SURE (0.9) or more; under it, a swing diagnose would report keeps the verdict unsure;
  safe                   the pilot kept its reward, none of the above applies, and a margin rule read the pilot: the
                         linear model's lr_max (its rise bent), the move between refreshes D (T > 1), or at T = 1
                         the entropy's first updates (no overshoot: the one collapse route on-policy); no lr margin is
                         quoted: the linear model's bound (up to LR_REACH x lr) is said to bound the reward's
                         oscillation, not collapse (real TRL runs fell far below it: `_pilot_headline._lr_margin`);
  unsure                 the pilot kept its reward but no margin rule could read it (a rise that has not bent, and
                         neither the entropy at T = 1 nor D at T > 1 logged): it says what would tell (`Headline.tell`). On public runs
                         such pilots went on to fall on 8 of 27 (paper_repro/public_collapse.py);
  unknown until a pilot  no pilot log: a config fixes T, G and the momentum, but not the curvature the learning
                         rate multiplies (`predict._config_forecast`).

One rule needs no pilot: a config whose loss has no band edge (`predict._clip_modes.unclipped`: no ratio, CISPO's
capped weight, or an eps_high past NO_CLIP_EDGE) at T > 1 is at risk before any pilot, and after one that could not
read the collapse rule (no drift or entropy logged): the steps after a rollout's first are off-policy and only the
clip's band edge bounds how far they move the policy from its sampler (`theory.collapse` (2), (4); the derivation in
`predict._clip_modes`). Its changes: the framework's clipping loss and band edge (`clip_changes`), or T = 1.

Every verdict but safe, unsure and unknown until a pilot names its change in the config's keys; unsure names what
would tell, unknown until a pilot changes only what the config alone decides (the unclipped rule above; with
--pass-rates, the zero-std share), never T for the linear bound, whose nearness only a pilot measures
(tests/predict/test_verdict_changes.py goes over each path). A change is given where the evidence gives its value (lr_max / MARGIN_FACTOR, the collapse bounds, the fall
chance's bounds, a T the config's keys reach exactly), each with what it buys; where it gives none (a dip or a fall
whose size no bound explains) a halving of lr is offered, said to be a guess to re-test with a pilot.

The pilot to run (no pilot given) is a power calculation: a linear trend over n evenly spaced steps with noise
sigma per step has a least-squares rise over the pilot with standard error sigma sqrt(12 / n) (Var(slope) =
12 sigma^2 / (n (n^2 - 1)) ~ 12 sigma^2 / n^3, times n^2), so a rise delta is seen at one-sided level 5% with
power 90% when

    n >= 12 (z sigma / delta)^2,   z = z_0.95 + z_0.90 = 1.645 + 1.282,                           (1)

with sigma <= (hi - lo) / (2 sqrt(N G)) (a reward in [lo, hi] has a per-response std of at most half its range;
a step averages N G responses) and delta = PILOT_RISE of the range; and at least PILOT_PERIODS refresh periods,
so that the pilot's samplers go stale as the run's will.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gspo_dynamics.predict._clip_modes import unclipped
from gspo_dynamics.predict._config_keys import PILOT_LOGGING, ConfigKeys
from gspo_dynamics.predict._frameworks import OBJECTIVE_CLIPS, PART_GROUP
from gspo_dynamics.predict._pilot_log import MIN_PILOT_POINTS
from gspo_dynamics.theory.ratios import GRPO_CLIP, GSPO_CLIP

SCHEMA_VERSION = "1.2"  # docs/outputs.md: predict's JSON schema (1.1: forecast.end_reward.value nullable, held added;
# 1.2: what_would_tell and lr_margin added, each out of the reason)
AT_RISK_SHARE = 0.7  # D above this share of the collapse limit is at risk: within the limit's own spread
AT_RISK_CHANCE = 0.1  # a fall chance of one run in ten or more is at risk
MARGIN_FACTOR = 2.0  # an lr within 2x of the linear bound is at risk; the lr we advise keeps this factor
POWER_Z = 1.645 + 1.282  # (1): one-sided 5% level, 90% power
PILOT_RISE = 0.1  # (1): the rise a pilot must see, a tenth of the reward's range
PILOT_PERIODS = 4  # a pilot spans at least this many refresh periods
FILTER_GROUPS = "algorithm.filter_groups.enable"  # verl's DAPO dynamic sampling: zero-std groups dropped, more drawn
VERDICTS = ("safe", "at risk", "unsafe", "unsure", "unknown until a pilot")
# T in each framework's keys (`predict._config_keys`)
REFRESH_FORMULA = {"trl": "steps_per_generation x num_iterations / gradient_accumulation_steps",
                   "verl": "ppo_epochs x data.train_batch_size / ppo_mini_batch_size",
                   "trainer": "steps_per_generation x num_iterations",
                   "openrlhf": "max_epochs x rollout_batch_size x n_samples_per_prompt / train_batch_size"}
# per framework: the loss key and a loss that clips with PPO's min, the band edge's key and its default (TRL's epsilon,
# verl's clip_ratio; our trainer's per objective, `predict._frameworks.OBJECTIVE_CLIPS`); the theory's own names last
CLIP_KEYS = {"trl": ("loss_type", "grpo", "epsilon_high", 0.2),
             "verl": ("actor_rollout_ref.actor.policy_loss.loss_mode", "vanilla", "actor_rollout_ref.actor.clip_ratio_high", 0.2),
             "trainer": ("objective", "grpo", "clip_high", GRPO_CLIP[1]),
             "openrlhf": ("policy_loss_type", "ppo", "eps_clip", 0.2),
             None: ("correction", "token", "clip_high", GRPO_CLIP[1])}


@dataclass(frozen=True)
class Change:
    """One edit of the config: the key, its new value as the config writes it, and what it buys."""

    key: str
    value: Any
    setting: str  # `key: value` or `key=value`, as the framework takes it
    buys: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "setting": self.setting, "buys": self.buys}


FLOOR_MOST = 0.5  # a G whose least zero-std share (every prompt at success 1/2), 2 (1/2)^G, is this or more: G = 2
FLOOR_TARGET = 0.3  # ... raised to the least G whose floor is at most this (`_signals.ZERO_STD_TARGET`'s 0.3)


def _group_floor_change(setup, keys: ConfigKeys | None, floor: float) -> list[Change]:
    """G raised where the config alone says most groups carry no signal: p^G + (1 - p)^G is least at p = 1/2, so at
    G = 2 at least half of the groups are all alike whatever the prompts (audit s43u D1: "change: none" beside "at
    least 0.5"); to the least G whose floor 2 (1/2)^G is at most FLOOR_TARGET, with the edits that keep T."""
    G = setup.hparams.group_size
    if G is None or floor < FLOOR_MOST:
        return []
    new = next(g for g in range(G + 1, 64) if 2 * 0.5 ** g <= FLOOR_TARGET)
    return group_changes(keys, G, new, f"zero-std groups at least {floor:.0%} -> at least {2 * 0.5 ** new:.0%} (the "
                                       "least over any prompts: every prompt at success 1/2; mixed difficulty gives more)")


def group_changes(keys: ConfigKeys | None, G: int, new: int, buys: str) -> list[Change]:
    """G set to `new` as the config's key, with each edit the framework needs beside it to keep T and accept the config
    (`ConfigKeys.group_edits`), each key saying the others; G's key alone, said to move T, where no integer value of
    the refresh key keeps it."""
    if keys is None:
        return [Change("group_size", new, f"group_size: {new}", buys)]
    edits = keys.group_edits(G, new)
    if edits is None:
        return [Change(keys.group, new, keys.setting(keys.group, new), f"{buys}; it moves T, which no integer "
                                                                        f"{keys.refresh} keeps: set T again")]
    why = _joint_why([name for name, _ in edits], keys)
    return [Change(key, value, keys.setting(key, value), buys + (
        f", with {' and '.join(keys.setting(k, v) for k, v in edits if k != key)} ({why})" if len(edits) > 1 else ""))
        for key, value in edits]


def _joint_why(names: list[str], keys) -> str:
    """What a joint edit's keys beside G's are for: T kept (TRL's rollout also in whole groups), the eval groups kept."""
    why = []
    if set(names) - {keys.group, "num_generations_eval"}:
        why.append("together they keep T" + (", and TRL takes only a generation batch of whole groups"
                                             if keys.framework == "trl" else ""))
    if "num_generations_eval" in names:
        why.append("num_generations_eval keeps the eval batch's groups, which TRL checks")
    return "; ".join(why)


def with_fixes(setup, changes: list[Change]) -> list[Change]:
    """The edits the framework needs to accept the config (`RunSetup.fixes`: TRL would not start the run) first, then
    `changes` on other keys: a config the framework refuses never gets "change: none" (audit s43u D1)."""
    fixes = [Change(key, value, setup.keys.setting(key, value) if setup.keys else f"{key}: {value}", buys)
             for key, value, buys in setup.fixes]
    return fixes + [c for c in changes if c.key not in {f.key for f in fixes}]


@dataclass(frozen=True)
class Headline:
    """The answer first (module docstring): `lines()` for the text, `to_json()` for the schema's top level."""

    verdict: str
    reason: str
    changes: tuple[Change, ...] = ()
    forecast: dict[str, Any] = field(default_factory=dict)  # end reward, interval, plateau time, collapse risk
    pilot_plan: dict[str, Any] | None = None  # without a pilot: steps, what to log
    settled: tuple[str, ...] = ()  # what the config alone settles
    tell: str | None = None  # an unsure verdict's: what would decide it, on its own line under the verdict
    margin: str | None = None  # a safe verdict's: how far the lr may rise, a note after the forecast

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if (self.tell and self.verdict != "unsure") or (self.margin and self.verdict != "safe"):
            raise ValueError(f"a {self.verdict!r} verdict carries no what-would-tell (unsure) or lr margin (safe)")

    def lines(self) -> list[str]:
        out = [f"verdict: {self.verdict} ({self.reason})"] + ([f"to tell: {self.tell}"] if self.tell else [])
        out += [f"change: {c.setting}  ({c.buys})" for c in self.changes] or ["change: none"]
        out += [f"forecast: {text}" for text in self.forecast.get("text", [])]
        out += [f"lr margin: {self.margin}"] if self.margin else []
        if self.pilot_plan:
            out.append(f"pilot: {self.pilot_plan['setting']} ({self.pilot_plan['why']})")
            out.append(f"  log: {self.pilot_plan['log']}")
        out += [f"known before a run: {s}" for s in self.settled]
        return out

    def to_json(self) -> dict[str, Any]:
        forecast = {k: v for k, v in self.forecast.items() if k != "text"}
        return {"schema_version": SCHEMA_VERSION, "verdict": self.verdict, "reason": self.reason,
                "what_would_tell": self.tell, "lr_margin": self.margin,
                "changes": [c.to_json() for c in self.changes], "forecast": forecast or None,
                "pilot_plan": self.pilot_plan, "settled": list(self.settled)}


def _keys(setup) -> ConfigKeys | None:
    """The setup's framework keys (None: the theory's own names)."""
    return getattr(setup, "keys", None)


def lr_change(setup, lr: float, buys: str) -> Change:
    """The learning-rate key set to `lr` (three significant digits), with what it buys."""
    keys = _keys(setup)
    key = keys.lr if keys else "lr"
    return Change(key, float(f"{lr:.3g}"), keys.setting(key, float(f"{lr:.3g}")) if keys else f"{key} <= {lr:.3g}", buys)


# the completion length cap, by framework (`length_cap_change`)
LENGTH_CAP_KEYS = {"trl": "max_completion_length", "verl": "data.max_response_length", "openrlhf": "generate_max_len"}


def length_cap_change(setup, tokens: int, buys: str) -> Change:
    """The completion length cap set to `tokens`, in the framework's key (LENGTH_CAP_KEYS)."""
    keys = _keys(setup)
    key = LENGTH_CAP_KEYS.get(keys.framework, "max_completion_length") if keys else "max_completion_length"
    return Change(key, int(tokens), keys.setting(key, int(tokens)) if keys else f"{key}: {int(tokens)}", buys)


def refresh_changes(setup, T: int, buys: str) -> list[Change]:
    """The edits that set T: the refresh key alone where an integer value of it gives T; else, where the config passes
    over each rollout more than once (`ConfigKeys.passes`), those set to 1 and the refresh key's value for T on one
    pass where it is not the config's own; [] where neither reaches T (never rounded)."""
    keys = _keys(setup)
    if keys is None:
        return [Change("refresh_interval", T, f"refresh_interval: {T}", buys)]
    value = keys.refresh_value(T)
    if value is not None:
        return [Change(keys.refresh, value, keys.setting(keys.refresh, value), buys)]
    if keys.passes_value < 2 or (value := keys.on_one_pass().refresh_value(T)) is None:
        return []
    out = [Change(keys.passes, 1, keys.setting(keys.passes, 1), buys)]
    if value != keys.refresh_value(setup.refresh_exact):
        out.append(Change(keys.refresh, value, keys.setting(keys.refresh, value), buys))
    return out


def lower_lr(setup, lr: float, bounds, why: str) -> Change:
    """The lr change after a fall or a dip: the least of `bounds` (the evidence's values) below lr, else a halving said
    to be a guess (`why`: what the pilot showed)."""
    below = [v for v in bounds if v is not None and v < lr]
    if below:
        return lr_change(setup, min(below), "the pilot's evidence puts the stable lr here")
    return lr_change(setup, lr / 2, f"a halving to re-test with a pilot: {why}, and no bound gives the stable lr")


def _setting(keys: ConfigKeys | None, key: str, value) -> str:
    return keys.setting(key, value) if keys else f"{key}: {value}"


def clip_changes(setup) -> list[Change]:
    """The edits that give an unclipped config (`predict._clip_modes.unclipped`) a band edge: PPO's clipping loss in
    place of one without a ratio or with a capped weight, and the edge at the framework's default where the config's
    is wider (GSPO's sequence clip under a sequence-level ratio)."""
    keys, hp = _keys(setup), setup.hparams
    loss_key, loss_value, edge_key, edge = CLIP_KEYS[keys.framework if keys else None]
    if hp.correction == "sequence":
        edge = GSPO_CLIP[1]
    elif keys is not None and keys.framework == "trainer":
        edge = OBJECTIVE_CLIPS.get(getattr(setup, "loss", None), GRPO_CLIP)[1]
    buys = "a band edge log(1 + eps_high) bounds how far a rollout's later steps move the policy (theory.collapse (4))"
    out = []
    if hp.correction == "none" or hp.clip_mode == "cap":
        out.append(Change(loss_key, loss_value, _setting(keys, loss_key, loss_value), "PPO's clip: " + buys))
    if hp.clip_high > edge:
        out.append(Change(edge_key, edge, _setting(keys, edge_key, edge), buys))
    return out


def clip_answer(setup) -> tuple[str, list[Change]] | None:
    """(reason, changes) for a config with no band edge at T > 1 (module docstring), in its own keys; None where T = 1
    or a clip bounds the move."""
    hp, keys = setup.hparams, _keys(setup)
    T, why = hp.refresh_interval, unclipped(hp)
    if T < 2 or why is None:
        return None
    loss_key, _, edge_key, _ = CLIP_KEYS[keys.framework if keys else None]
    loss = (getattr(setup, "loss", None) or "").split(" ")[0]
    clip = (f"{edge_key} {hp.clip_high:g}" if hp.correction != "none" and hp.clip_mode != "cap"
            else f"{loss_key} {loss}" if loss else f"correction {hp.correction}" if hp.correction == "none"
            else f"clip_mode {hp.clip_mode}")
    formula = REFRESH_FORMULA.get(keys.framework if keys else None)
    reason = (f"T = {T} optimizer steps per rollout" + (f" ({formula})" if formula else "") + f" with {clip}: {why}; "
              "the steps after a rollout's first are off-policy and only a clip's band edge bounds how far they move "
              "the policy from its sampler (theory.collapse (2), (4)): the move grows with T until it passes a collapse "
              "limit only a pilot can place")
    return reason, clip_changes(setup) + refresh_changes(setup, 1, "on-policy: no stale step for a clip to bound")


def pilot_steps(hparams, reward_range: tuple[float, float] | None, prompts: float | None = None) -> tuple[int, str]:
    """n of equation (1), at least PILOT_PERIODS refresh periods, with the reason in words, in the log's steps: an
    optimizer step's (N G responses each), or, given the `prompts` of a rollout (verl's data.train_batch_size, whose
    trainer.total_training_steps counts rollouts), a trainer step's: one refresh period of T optimizer steps,
    logging the rollout's prompts x G responses (N G T / ppo_epochs where the mini-batch divides the rollout)."""
    T = hparams.refresh_interval
    rollout = prompts is not None
    unit, n_periods = ("trainer step", PILOT_PERIODS) if rollout else ("step", PILOT_PERIODS * T)
    periods = f"{PILOT_PERIODS} refresh periods of T = {T}" + (" optimizer steps (a trainer step each)"
                                                               if rollout else "")
    if hparams.group_size is None:
        return max(n_periods, MIN_PILOT_POINTS), (f"{periods}; with no group size G given, no noise to size it by "
                                                   "(give num_generations / rollout.n / group_size)")
    width = 1.0 if reward_range is None else reward_range[1] - reward_range[0]
    responses = round((prompts if rollout else hparams.num_groups) * hparams.group_size)
    sigma = width / (2.0 * math.sqrt(responses))
    delta = PILOT_RISE * width
    n_power = math.ceil(12.0 * (POWER_Z * sigma / delta) ** 2)
    n = max(n_power, n_periods, MIN_PILOT_POINTS)
    assumed = "" if reward_range is not None else " (a [0, 1] reward assumed: --reward-range gives yours)"
    count = f"{responses} responses per rollout" if rollout else f"N G = {responses} responses"
    why = f"to see a rise of {delta:.3g} over noise <= {sigma:.3g} per {unit} at {count}, 5% level, 90% power{assumed}"
    if n_periods > n_power:
        why += f"; {periods}"
    if MIN_PILOT_POINTS > max(n_power, n_periods):
        why += f"; the {MIN_PILOT_POINTS} logged {unit}s a pilot's forecast needs"
    return n, why


def _stopped_pilot(schedule, run_length: str, n: int) -> str:
    """A pilot of a run whose lr schedule follows its length (`LRSchedule.follows_length`): the run as configured,
    stopped at step n. Setting the length to n would give another warm-up (a share of it: 15 steps, not 100, at 10%
    of 143) or a decay that ends at step n, so the pilot would not run at the run's lr (audit s43c D1)."""
    what = " and ".join(part for part, holds in (("warm-up (a share of it)", schedule.warmup_share is not None),
                                                 ("decay", schedule.decays)) if holds)
    return (f"the run as configured, stopped after step {n} (keep {run_length}: it sets the lr schedule's {what}; "
            f"a {run_length} of {n} would give the pilot another schedule)")


def config_headline(forecast, reward_range=None, zero_std=None) -> Headline:
    """The answer without a pilot (`predict._config_forecast.ConfigForecast`, or a prior's forecast holding one in
    `.config`): unknown until a pilot, the pilot to run, and what the config alone settles. `zero_std`: the mixture
    law's answer for --pass-rates (`predict._zero_std.ZeroStdAnswer`), or None."""
    config = getattr(forecast, "config", forecast)
    setup, hp = config.setup, config.setup.hparams
    keys = _keys(setup)
    n, why = pilot_steps(hp, reward_range, keys.rollout_prompts if keys else None)
    warmup = setup.schedule.warmup if setup.schedule is not None else 0
    if warmup:  # (1) sizes a pilot at the run's lr: one inside the warm-up never reaches it (audit s39c 6)
        n, why = warmup + n, f"{warmup} warm-up steps, then {n} at the run's lr: {why}"
    if setup.run_steps is not None and n > setup.run_steps:
        why = (f"the whole run: seeing a rise needs {n} steps ({why}), more than the run's own {setup.run_steps}, so "
               "the whole run may not show one above that noise")
        n = setup.run_steps
    framework = keys.framework if keys else "trainer"
    setting = keys.setting(keys.run_length, n) if keys else f"steps: {n}"
    if setup.schedule is not None and setup.schedule.follows_length and (setup.run_steps is None or n < setup.run_steps):
        setting = _stopped_pilot(setup.schedule, keys.run_length if keys else "steps", n)
    plan = {"steps": n, "setting": setting, "why": why,
            "log": PILOT_LOGGING[framework],
            "command": "gspo-dynamics predict --config CONFIG --pilot LOG"}
    T = hp.refresh_interval
    settled = [f"T = {T} optimizer step{'s' if T > 1 else ''} per sampler refresh"  # the linear model's factor: --explain
               + ("" if T == 1 else ": the linear model's lr bound (the reward's oscillation) falls with T (--explain "
                  "gives it), but the lr at which real TRL runs collapsed moved under 2x from T = 1 to T = 8 "
                  "(paper_repro/RESULTS.md, trl-atlas-v2)")]
    changes = []  # none from T alone: its cost to the linear bound is settled above, but whether the run comes near that
    # bound is the curvature's, which only a pilot measures (the unclipped rule below needs no pilot)
    if hp.group_size is not None:
        responses = hp.num_groups * hp.group_size
        group_key = keys.group if keys else "group_size"
        doubling = (keys.doubling if keys else "") or f"{group_key} {2 * hp.group_size}"
        part = any(PART_GROUP in n for n in setup.notes)  # N rounded up from under one group: fewer responses
        settled.append(f"reward noise per step scales as 1 / sqrt(N G) = 1 / sqrt({responses})"
                       + (" at N rounded up to one group (a step holds fewer responses: N rounded, above)" if part else "")
                       + f": {doubling} cuts it by {1 - 1 / math.sqrt(2):.0%}")
        if zero_std is not None:
            settled += zero_std.settled_lines()
            changes += zero_std.changes(setup)
        else:
            changes += _group_floor_change(setup, keys, config.zero_std_share[0.5])
            filtered = any(k == FILTER_GROUPS and v for k, v, _ in setup.unmodelled)  # DAPO's dynamic sampling
            settled.append(f"zero-std groups at {group_key} {hp.group_size}: at least {config.zero_std_share[0.5]:.2g} "
                           f"(every prompt at success 0.5), {config.zero_std_share[0.9]:.2g} at 0.9; prompts of mixed "
                           "difficulty give far more (--pass-rates FILE of the starting model's per-prompt pass rates)"
                           + (f"; {FILTER_GROUPS} drops them and draws more groups: they cost generation, not diluted "
                              "steps" if filtered else ""))
    reason = ("a config fixes T, G and the momentum but not the curvature the learning rate multiplies: "
              "only a run measures the margin")
    changes = with_fixes(setup, changes)
    verdict, unclip = "unknown until a pilot", clip_answer(setup)
    if unclip is not None:  # at risk before any pilot: the clip's changes first, T = 1 already among them
        verdict, reason = "at risk", unclip[0]
        changes = unclip[1] + [c for c in changes if c.key not in {u.key for u in unclip[1]}]
    prior = getattr(forecast, "prior", None)
    if prior is not None and prior.level is not None:
        band = "" if prior.interval is None else f", 90% interval [{prior.interval[0]:.3g}, {prior.interval[1]:.3g}]"
        settled.append(f"end level of the {len(prior.kept)} finished runs of the task that kept their reward: "
                       f"{prior.level:.3g}{band}")
    return Headline(verdict, reason, tuple(changes), pilot_plan=plan, settled=tuple(settled))
