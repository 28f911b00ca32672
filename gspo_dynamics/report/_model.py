"""The report's data: sections of facts (lines, tables) and charts, one `RunReport` per run, the `Report`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np

from gspo_dynamics.diagnose import Diagnosis
from gspo_dynamics.fit import held_level
from gspo_dynamics.report._compute import Accounting
from gspo_dynamics.report._divergence import Parting
from gspo_dynamics.report._forecast import ForecastView

# the curves shown, in order: (series, title)
CURVES: tuple[tuple[str, str], ...] = (
    ("reward", "reward"), ("entropy", "entropy (nats)"), ("mean_length", "completion length (tokens)"),
    ("truncation_rate", "truncated share"), ("kl_ref", "KL to the reference"), ("clip_frac", "clip fraction"),
    ("grad_norm", "gradient norm"), ("frac_zero_std", "zero-std groups (share)"),
)


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Section:
    """One part of the page: `id` (the HTML element's), a title, facts (lines, tables) and charts (SVG, HTML only)."""

    id: str
    title: str
    lines: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    charts: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RunReport:
    """One run: its label, log, diagnose's result, the accounting and (with a config) predict's forecast."""

    label: str
    log: object  # RunLog
    diagnosis: Diagnosis
    accounting: Accounting
    forecast: ForecastView | None = None

    @property
    def end_reward(self) -> float | None:
        """The mean of the last HELD_STEPS logged rewards (`fit.held_level`); None without a reward."""
        if "reward" not in self.log or not self.log.n_points("reward"):
            return None
        return held_level(self.log.valid("reward")[1]).level


@dataclass(frozen=True, kw_only=True)
class Report:
    title: str
    answer: tuple[str, ...]  # the first lines a user sees (stdout, the page's top)
    sections: tuple[Section, ...]
    runs: tuple[RunReport, ...]
    partings: tuple[tuple[str, tuple[Parting, ...]], ...] = field(default_factory=tuple)  # (run label, vs the first)

    def section(self, id: str) -> Section:
        return next(s for s in self.sections if s.id == id)


def labels(sources: list[str]) -> list[str]:
    """Short names that tell the runs apart: the shortest path tails that differ, then (several runs) without the
    start and the end they all share, cut at a `/` or `_` (never inside a number such as 1e-3)."""
    parts = [PurePath(s).parts or (s,) for s in sources]
    names = next((["/".join(p[-k:]) for p in parts] for k in range(1, max(len(p) for p in parts) + 1)
                  if len({"/".join(p[-k:]) for p in parts}) == len(parts)), None)
    if names is None:
        return [f"{n} ({i + 1})" for i, n in enumerate(sources)]
    if len(names) < 2:
        return names
    head = _shared(names)
    tail = _shared([n[len(head):][::-1] for n in names])
    short = [n[len(head):len(n) - len(tail)] for n in names]
    return short if all(short) and len(set(short)) == len(short) else names


def _shared(names: list[str]) -> str:
    """The longest common start of `names` that ends just after a separator (or is empty)."""
    common = os.path.commonprefix(names)
    cut = max(common.rfind(c) for c in "/_")
    return common[:cut + 1] if cut >= 0 else ""


def finding_steps(d: Diagnosis) -> list[tuple[float, str]]:
    """(step, name) of each finding (not a note) at the first step its evidence names (`marked_at` where an item
    compares a whole log's early and late windows: the late window's start, not the log's first step)."""
    out = []
    for f in d.findings:
        if f.severity == "note":
            continue
        steps = [e.get("marked_at", e["steps"][0]) for e in f.evidence if e.get("steps")]
        if steps:
            out.append((float(min(steps)), f.name.replace("_", " ")))
    return out


def present(logs: list) -> tuple[list[tuple[str, str]], list[str]]:
    """(the CURVES any log holds with a finite value, the titles of those none does)."""
    shown, absent = [], []
    for name, title in CURVES:
        has = any(name in log and np.isfinite(log[name]).any() for log in logs)
        (shown.append((name, title)) if has else absent.append(title))
    return shown, absent
