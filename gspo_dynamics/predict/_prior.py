"""The reward a run ends at, read off finished runs of the same task: the task's prior level.

A pilot sees the first part of a rise. Where the curve stops is set by the task and the refresh interval far more
than by the other hyperparameters: over the 790 stable cells of our trainer's first 92 forecast grids the final
reward's standard deviation within one task and T is at most 0.03 at T = 1 and 0.05 at T = 4, while a 24-step pilot
of a slow task stops 0.1-0.2 below it (gspo_dynamics/experiments/_task_prior.py, paper_repro/pilot_forecast.md). So finished runs
of the same task at the same T forecast it, where no fit of a still-rising pilot can:

    e_j = the mean of run j's last END_SHARE of reward points                                   (1)
    R_prior = mean of e_j over the n runs that kept their reward (no real fall: fit._fall (2))   (2)
    R_prior +- t_{n-1, (1 + LEVEL) / 2} s sqrt(1 + 1 / n),  s the sample std of those e_j        (3)

Where the runs' configs say more of them (our trainer writes config.json beside its log), the level leans toward
the runs that share the config's loss and then also its optimizer and learning rate, a level's own runs weighed
against its parent's mean as SHRINKAGE = kappa runs:

    m_0 = R_prior (2),   m_k = (sum_{j in K_k} e_j + kappa m_{k-1}) / (|K_k| + kappa),   k = 1, 2            (4)

K_1 the kept runs whose config names the same loss (`predict.RunSetup.loss`), K_2 those of K_1 with the same
optimizer and lr; the level is m_2 (a level with no run is its parent's: m_k = m_{k-1}). (4) is the posterior mean
of the level's own mean mu_k under mu_k ~ N(m_{k-1}, tau^2), e_j ~ N(mu_k, sigma^2), with kappa = sigma^2 / tau^2
and the parent's mean plugged in (empirical Bayes: m_{k-1} is estimated, not known, and K_k's own runs count in it
too, so (4) is not the exact posterior of a three-level model; one kappa serves both levels, as if loss groups and
(optimizer, lr) subgroups spread alike). kappa = 2: one matching run moves the level a third of the way, not half
(chosen on our trainer's forecast grids: docs/validation.md). The interval (3) keeps its half-width (the spread of
every kept run, between groups included), centred on m_2: a heuristic, not (4)'s model's predictive interval.

(3) is the prediction interval for one more draw from a normal distribution of unknown mean and variance (the
Student-t pivot (e_new - mean) / (s sqrt(1 + 1/n)) ~ t_{n-1}): it covers a new run's end level with probability
LEVEL when the runs' levels and the new one are i.i.d. normal; it needs n >= 2. A run that lost its reward is left
out of (2): where it ended says how it collapsed, not where the task's reward stops, and the pilot forecast's regime
says whether this config is predicted to keep its reward. So is a run whose reward turned non-finite at its end (it
diverged: `RunLog.diverged`) and a run whose log (our trainer's window positions) or, where its log does not say,
whose config shows another T. Where the
reward's range is not known, a fall must pass FALL_SHARE of the run's own span of rewards to count (fit._fall (2)
with that span as the range): a fall test without a size rule reads a dip of 1% as a loss.

The runs must share the task (prompts, reward) and T: the user's to say, since only our trainer's logs and the runs'
configs (where given) carry T. How the interval covered our trainer's grids, leave one combination out:
docs/validation.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import stdtrit

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import reward_fall
from gspo_dynamics.logs import RunLog, read_log
from gspo_dynamics.predict._config_forecast import ConfigForecast
from gspo_dynamics.predict._configs import RunSetup, load_config_file, read_run_config
from gspo_dynamics.predict._end_reward import END_SHARE
from gspo_dynamics.predict._pilot_log import other_refresh

LEVEL = 0.9  # the prediction interval's coverage (3)
SHRINKAGE = 2.0  # kappa of (4): a level's own runs weighed against its parent's mean as kappa runs
CONFIG_NAME = "config.json"  # a run's config beside its log: train.config's CONFIG_NAME, restated (train imports torch)
MIN_RUN_POINTS = 12  # a finished run's reward points: (1) reads its last sixth, 2 points at least


def prior_interval(ends: Sequence[float], level: float = LEVEL) -> tuple[float, float, float] | None:
    """(R_prior (2), lower, upper (3)) of the end levels `ends`; None with fewer than two."""
    e = np.asarray(ends, dtype=float)
    if e.size < 2:
        return None
    mean, s = float(e.mean()), float(e.std(ddof=1))
    half = float(stdtrit(e.size - 1, (1.0 + level) / 2.0)) * s * math.sqrt(1.0 + 1.0 / e.size)
    return mean, mean - half, mean + half


def interval_about(ends: Sequence[float], centre: float) -> tuple[float, float] | None:
    """(3)'s interval of the end levels `ends` moved to `centre` (its half-width kept: the module docstring, after
    (4)); None with fewer than two."""
    interval = prior_interval(ends)
    return None if interval is None else (interval[1] - interval[0] + centre, interval[2] - interval[0] + centre)


def shrunk_level(levels: Sequence[Sequence[float]], kappa: float = SHRINKAGE) -> float | None:
    """m_K of (4), K = len(levels) - 1: levels[0] every kept run's end level, levels[k] those of levels[k - 1] that
    share the k-th key with the forecast run; None when levels[0] is empty."""
    if not (isinstance(kappa, (int, float)) and math.isfinite(kappa) and kappa > 0):
        raise ConfigError(f"the shrinkage kappa of predict._prior (4) must be a positive number, got {kappa!r}")
    if not len(levels) or not len(levels[0]):
        return None
    m = float(np.mean(levels[0]))
    for level in levels[1:]:
        e = np.asarray(level, dtype=float)
        m = float((e.sum() + kappa * m) / (e.size + kappa))
    return m


def config_beside(source: str) -> tuple[RunSetup | None, str | None]:
    """(the run config beside a log, why it was not read): CONFIG_NAME in the log's directory (or in the directory
    given), read by `predict.read_run_config`; (None, None) where there is none, where the log has no path of its own
    (read from text), and beside a model's config.json (a Hugging Face checkpoint's, as in a TRL output directory).
    A finished run's config is read past keys this tool does not know (`allow_unknown`): a trainer wrote it, perhaps
    a release newer than the tables, and only its loss, optimizer and lr are matched on."""
    path = Path(source)
    if not (path.is_file() or path.is_dir()):
        return None, None
    found = (path if path.is_dir() else path.parent) / CONFIG_NAME
    if not found.is_file():
        return None, None
    try:
        raw = load_config_file(found)
        if "architectures" in raw or "model_type" in raw:
            return None, None
        return read_run_config(raw, allow_unknown=True), None
    except (ConfigError, TypeError, ValueError, RecursionError) as error:  # its loss and step stay unknown, said
        return None, f"{found} is not a run config ({error})"


def _run_key(setup: RunSetup | None) -> tuple[str | None, str, float] | None:
    """(loss, optimizer, lr) of (4)'s levels; None without a config."""
    return None if setup is None else (setup.loss, setup.hparams.optimizer.name, setup.hparams.lr)


def matched_levels(runs: Sequence[PriorRun], setup: RunSetup) -> list[list[float]]:
    """[every run's end, K_1's, K_2's] of (4) for the kept `runs` against the forecast run's `setup`: K_1 the runs whose
    config names `setup`'s loss (none where it names none), K_2 those of them with its optimizer and lr."""
    key = _run_key(setup)
    same_loss = [r for r in runs if r.key is not None and key[0] is not None and r.key[0] == key[0]]
    same_step = [r for r in same_loss if r.key[1] == key[1] and math.isclose(r.key[2], key[2], rel_tol=1e-9)]
    return [[r.end for r in runs], [r.end for r in same_loss], [r.end for r in same_step]]


@dataclass(frozen=True)
class PriorRun:
    """One finished run: its end level (1) and whether it kept its reward."""

    source: str
    points: int
    end: float
    lost: bool  # a real fall below its running best (fit._fall (2)): left out of (2)
    refresh: int | None = None  # the run's own T where its log or config says it is not the config's: left out of (2)
    diverged: int | None = None  # the first step whose reward is non-finite, through the log's end: left out of (2)
    key: tuple[str | None, str, float] | None = None  # (loss, optimizer, lr) of its config beside the log, for (4)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "points": self.points, "end_reward": self.end, "lost_reward": self.lost,
                "other_refresh_interval": self.refresh, "diverged_at_step": self.diverged,
                "config": None if self.key is None else dict(zip(("loss", "optimizer", "lr"), self.key))}

    @property
    def kept(self) -> bool:
        return not self.lost and self.refresh is None and self.diverged is None


@dataclass(frozen=True)
class TaskPrior:
    """The end level of finished runs of the task (module docstring)."""

    runs: tuple[PriorRun, ...]
    level: float | None  # m_2 of (4) where the forecast run's config is known, else R_prior (2); None when no run kept its reward
    interval: tuple[float, float] | None  # (3) at LEVEL about `level`, clipped to the reward's range; None under two kept runs
    assumed: tuple[str, ...] = ()  # what was taken without being given (the reward's range, unread configs)
    pooled: float | None = None  # R_prior (2), every kept run alike
    matched: tuple[int, int] | None = None  # (|K_1|, |K_2|) of (4); None: no config to match on

    @property
    def kept(self) -> list[PriorRun]:
        return [r for r in self.runs if r.kept]

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "interval": None if self.interval is None else list(self.interval),
                "interval_level": LEVEL, "pooled_level": self.pooled, "shrinkage": SHRINKAGE,
                "same_loss_runs": None if self.matched is None else self.matched[0],
                "same_loss_optimizer_lr_runs": None if self.matched is None else self.matched[1],
                "runs": [r.to_json() for r in self.runs], "assumed": list(self.assumed)}

    def summary_lines(self) -> list[str]:
        kept = self.kept
        left_out = {"lost their reward": [r.source for r in self.runs if r.lost],
                    "diverged (non-finite rewards to the end)": [f"{r.source} (from step {r.diverged})"
                                                                for r in self.runs if r.diverged is not None],
                    "ran at another T (their logged window positions or their configs)": [f"{r.source} (T = {r.refresh})"
                                                                        for r in self.runs if r.refresh is not None]}
        out = [f"the task's prior ({len(self.runs)} finished run{'s' * (len(self.runs) != 1)} of the same task and T, "
               f"each one's last 1/{round(1 / END_SHARE)} of reward points; --prior):"]
        if self.level is None:
            out.append("  no run is left to read an end level from (below)")
        elif self.interval is None:
            out.append(f"  reward at the end {self.level:.3g} (from one run: no interval; two or more give one)")
        else:
            lo, hi = self.interval
            out.append(f"  reward at the end {self.level:.3g}, {LEVEL:.0%} prediction interval [{lo:.3g}, {hi:.3g}] "
                       f"from {len(kept)} runs (Student t); on our trainer's grids such a level forecast the end far "
                       "better than the curve of a pilot of a quarter of the run (paper_repro/pilot_forecast.md)")
        if self.matched is not None and self.level is not None and any(self.matched):
            out.append(f"  leaning toward the runs like this config (predict._prior (4), kappa {SHRINKAGE:g}): {self.matched[0]} "
                       f"with its loss, {self.matched[1]} of them also with its optimizer and lr; all {len(kept)} alike: "
                       f"{self.pooled:.3g}")
        return (out + [f"  left out, {why}: {', '.join(names)}" for why, names in left_out.items() if names]
                + [f"  assumed: {a}" for a in self.assumed])


def run_end(source: str, log: RunLog, reward_range=None, refresh_interval: int | None = None,
            range_note: str = "", key: tuple[str | None, str, float] | None = None) -> PriorRun:
    """A finished run's end level (1), fall (fit._fall), divergence and, against `refresh_interval`, its own T where
    logged; ConfigError when it has too few reward points or leaves `reward_range` (`range_note` says where that
    range came from)."""
    steps, reward = log.valid("reward")
    if len(reward) < MIN_RUN_POINTS:
        raise ConfigError(f"the finished run {source} has {len(reward)} reward points; a prior needs at least "
                          f"{MIN_RUN_POINTS} (its end is its last 1/{round(1 / END_SHARE)})")
    if reward_range is not None and (reward.min() < reward_range[0] or reward.max() > reward_range[1]):
        raise ConfigError(f"the finished run {source} has rewards from {reward.min():.4g} to {reward.max():.4g}, outside "
                          f"the reward range [{reward_range[0]:g}, {reward_range[1]:g}]{range_note}: is it a run of the same task?")
    k = max(1, round(len(reward) * END_SHARE))
    span = reward_range if reward_range is not None else (float(reward.min()), float(reward.max()))
    fall = reward_fall(steps, reward, span if span[1] > span[0] else None)
    diverged = log.diverged.get("reward")
    return PriorRun(source=source, points=len(reward), end=float(np.mean(reward[-k:])),
                    lost=bool(fall is not None and fall.lost),
                    refresh=None if refresh_interval is None else other_refresh(log, len(log.steps), refresh_interval),
                    diverged=None if diverged is None else int(diverged[0]), key=key)


def task_prior(sources: Sequence[str | RunLog], reward_range=None, column_map=None,
               refresh_interval: int | None = None, range_note: str = "", setup: RunSetup | None = None,
               configs: Sequence[str | None] | None = None) -> TaskPrior:
    """(2) and (3) over finished runs (paths any `read_log` format, or logs read already); `reward_range` (lo, hi)
    where known, for the fall's size rule (fit._fall (2)) and as a check (`range_note`: where it came from, for the
    error); `refresh_interval` the run's T, against which a run whose log shows another T is left out. With the
    forecast run's `setup`, the level is (4)'s over the runs' configs: `configs[i]` (a config file, read as --config
    reads one: ConfigError when it cannot be) where given, else the one beside the log (`config_beside`)."""
    if isinstance(sources, (str, RunLog)):
        sources = [sources]
    if not sources:
        raise ConfigError("a task prior needs at least one finished run (--prior LOG ...)")
    logs = [source if isinstance(source, RunLog) else read_log(source, column_map=column_map) for source in sources]
    names = [log.source for log in logs]
    twice = next((name for name in names if name != "<text>" and names.count(name) > 1), None)
    if twice is not None:
        raise ConfigError(f"the finished run {twice} is given twice: each run counts once in the prior")
    given = list(configs) if configs is not None else [None] * len(logs)
    if len(given) != len(logs):
        raise ConfigError(f"{len(given)} run configs for {len(logs)} finished runs: one per run (None where not given)")
    configs = [(None, None) if setup is None else (read_run_config(c, allow_unknown=True), None) if c  # as beside
               else config_beside(log.source)
               for log, c in zip(logs, given)]
    runs = [_at_config_T(run_end(log.source, log, reward_range, refresh_interval, range_note, _run_key(config)),
                         config, refresh_interval, "window/position" in log) for log, (config, _) in zip(logs, configs)]
    if reward_range is None or range_note:  # no range given, or one only inferred from rewards
        _check_shared_scale(logs)
    kept = [r for r in runs if r.kept]
    pooled = None if not kept else float(np.mean([r.end for r in kept]))
    level, matched, assumed = pooled, None, tuple(why for _, why in configs if why)
    if setup is not None and kept:
        levels = matched_levels(kept, setup)
        level, matched = shrunk_level(levels), (len(levels[1]), len(levels[2]))
        if setup.loss is None and any(r.key is not None and r.key[0] is not None for r in kept):
            assumed += ("the config names no loss (TRL: loss_type): the level leans on no run's config (predict._prior (4))",)
    interval = interval_about([r.end for r in kept], level)
    if interval is not None and reward_range is not None:  # a run's level lies in the range: so does the interval
        interval = (max(interval[0], reward_range[0]), min(interval[1], reward_range[1]))
    return TaskPrior(runs=tuple(runs), level=level, interval=interval, assumed=assumed, pooled=pooled, matched=matched)


def _at_config_T(run: PriorRun, config: RunSetup | None, refresh_interval: int | None, logged: bool) -> PriorRun:
    """`run` with its config's T as its own where that is not `refresh_interval` and its log did not say its T
    (`logged`: it logs our trainer's window positions, which `run_end` read): left out of (2) as a run whose log
    shows another T is."""
    if config is None or refresh_interval is None or logged:
        return run
    own = config.hparams.refresh_interval
    return run if own == refresh_interval else dataclasses.replace(run, refresh=own)


def _check_shared_scale(logs: Sequence[RunLog]) -> None:
    """ConfigError when two runs' rewards share no value: runs of one task start from the same policy, so their
    reward ranges overlap; disjoint ones are runs of another task or another reward scale, whose pooled level
    and interval would mean nothing. Made unless the task's range was given (`run_end` then checks each run
    against it): a range inferred from rewards, [0, 1] say, holds runs of another task too."""
    spans = []
    for log in logs:  # each has rewards (`run_end` checked it first)
        reward = log.valid("reward")[1]
        spans.append((log.source, float(reward.min()), float(reward.max())))
    for i, (a, lo_a, hi_a) in enumerate(spans):
        for b, lo_b, hi_b in spans[i + 1:]:
            if hi_a < lo_b or hi_b < lo_a:
                raise ConfigError(f"the finished runs {a} (rewards {lo_a:.4g} to {hi_a:.4g}) and {b} ({lo_b:.4g} to "
                                  f"{hi_b:.4g}) share no reward value: runs of one task start alike; give the task's "
                                  "range (--reward-range) to check them, or leave the other task's run out")


@dataclass(frozen=True)
class PriorForecast:
    """Before a run, without a pilot: what the config alone determines (`predict.config_forecast`) and the end level
    of finished runs of the task (`predict --config C --prior LOG ...`)."""

    config: ConfigForecast
    prior: TaskPrior

    def to_json(self) -> dict[str, Any]:
        return {**self.config.to_json(), "task_prior": self.prior.to_json()}

    def summary_lines(self) -> list[str]:
        lines = self.config.summary_lines()
        notes = [i for i, line in enumerate(lines) if line.startswith("note: ")]
        at = notes[0] if notes else len(lines)  # the prior's lines before the config's notes
        return lines[:at] + self.prior.summary_lines() + lines[at:]


def prior_forecast(config: ConfigForecast, sources: Sequence[str | RunLog], reward_range=None,
                   column_map=None, configs: Sequence[str | None] | None = None) -> PriorForecast:
    """The config's answer and `task_prior` of `sources` (with their `configs`, where given) at the config's T.
    Without `reward_range`, [0, 1] is taken (and said) when every run's rewards lie there, as `predict.pilot_forecast`
    does for a pilot."""
    logs = [s if isinstance(s, RunLog) else read_log(s, column_map=column_map)
            for s in ([sources] if isinstance(sources, (str, RunLog)) else sources)]
    assumed = ()
    rewards = [log.valid("reward")[1] for log in logs]
    if reward_range is None and all(len(r) for r in rewards) and all(0.0 <= r.min() and r.max() <= 1.0 for r in rewards):
        reward_range = (0.0, 1.0)
        assumed = ("the reward is a success rate in [0, 1] (every finished run's rewards lie there); give the range "
                   "(--reward-range) if not",)
    prior = task_prior(logs, reward_range, refresh_interval=config.setup.hparams.refresh_interval,
                       range_note=" (taken: every run's rewards lie there)" if assumed else "", setup=config.setup,
                       configs=configs)
    return PriorForecast(config, dataclasses.replace(prior, assumed=assumed + prior.assumed))
