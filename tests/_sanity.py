"""The absurd-number checker (issue 49, item 4): walks `predict`'s and `diagnose`'s JSON and text and lists every
number the data cannot support, by rules stated here. Used by tests/predict/test_sanity.py and
benchmarks/absurd_numbers.py (the sweep over every log found).

The rules, each with its reason:

  non_finite   no NaN or inf anywhere: the JSON is written with allow_nan=False, and a text that prints `nan` or `inf`
               as a value says nothing a user can act on (prose about such values, "is NaN or infinite", is not one).
  reward       a reward-valued quantity (a plateau, an end reward, an interval's end, the held level) lies within the
               reward's reach `[lo, hi]`: the given range, else [0, 1] where every reward lies there (a success
               rate's bounds), else the observed range widened by its own span on each side (`Context.reach`).
               A reward outside it is one no run of this task can show.
  rise         a difference of two rewards (`remaining_rise`, `remaining`) is at most the reach's width w in size.
  stderr       the standard error of a reward-valued quantity is at most w: a larger one says the data give no value
               at all, so the value must be null with a reason instead.
  step         a step or time (`time_to_plateau`, a plateau's step) is at most STEP_MULTIPLE times the run's length L
               (the later of the log's last step and the run's length the config gives), its stderr too: an
               exponential's 5% time is 3 tau, and a tau the data identify is at most of the order of the span they
               cover; a time several runs long is extrapolation the data do not carry.
  lr_multiple  an lr bound (`max_safe_lr`, `collapse_max_lr`, the text's "the linear model's bound, Nx") is at most LR_MULTIPLE times the
               lr the pilot ran: a pilot measured one lr, and two decades past it the linear model's stiffness is
               an extrapolation of the evidence, not a reading of it.

The fit's own parameters are held to the same rules (issue 49: "details included"): `fit.params.r_inf` and `r0`
(and the selection's trend, `fit.selection.exponential_params`) are rewards, their `fit.stderr` stderrs, `tau` and its
stderr a time (step rule); a parameter the data do not identify is null there, its reason in `fit.unidentified`.
So is every evidence item's rise (`rise`, `climb`, `detectable_climb`: rise rule), wherever it sits. The text rules
read the same quantities where `--explain` prints them: `r_inf = x +- s`, `r0 = x +- s`, `tau = x +- s`, an evidence
line's `rise x` / `climb x` / `detectable_climb x`, and "the rise x". The model selection's statistics (BIC), an
oscillator's damping, stiffness and v0 (rates, with no bound a run sets) and window means of the logged data (which
lie in the observed range by construction) are not judged.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

STEP_MULTIPLE = 4.0
LR_MULTIPLE = 100.0
REWARD_KEYS = ("plateau", "r_inf_implied", "end_reward", "held_reward", "interval", "late_reward", "peak")
RISE_KEYS = ("remaining_rise", "remaining", "rise", "climb", "detectable_climb")
STEP_KEYS = ("time_to_plateau", "step")
LR_KEYS = ("max_safe_lr", "collapse_max_lr", "max_lr")
FIT_REWARDS = ("r_inf", "r0")  # the fit's reward-valued parameters (`fit.params`, `fit.selection.exponential_params`)
FIT_TIMES = ("tau",)
FIT_PARAMS = ("fit.params.", "fit.selection.exponential_params.")
RAW_FIT = ("fit.selection",)  # the model selection's statistics (its trend's parameters are judged: FIT_PARAMS)
NUMBER = r"(-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)"


@dataclass(frozen=True)
class Context:
    """What a number is judged against: the reward's reach, the run's length in steps, the lr the pilot ran."""

    reach: tuple[float, float]
    length: float
    lr: float | None = None

    @property
    def width(self) -> float:
        return self.reach[1] - self.reach[0]

    @classmethod
    def of(cls, reward, last_step: float, *, reward_range=None, run_steps=None, lr=None) -> "Context":
        """The reach: `reward_range`, else [0, 1] where every reward lies there, else [min - span, max + span]."""
        r = np.asarray(reward, dtype=float)
        r = r[np.isfinite(r)]
        if reward_range is not None:
            reach = (float(reward_range[0]), float(reward_range[1]))
        elif r.size and r.min() >= 0.0 and r.max() <= 1.0:
            reach = (0.0, 1.0)
        else:
            span = float(r.max() - r.min()) if r.size else 1.0
            span = span or max(abs(float(r.max())) if r.size else 1.0, 1.0)
            reach = (float(r.min()) - span, float(r.max()) + span)
        return cls(reach, float(max(last_step, run_steps or 0, 1)), lr)


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1].split("[", 1)[0]


def _owner(path: str) -> str:
    """The key a `value`/`stderr`/list item belongs to: `a.plateau.value` -> plateau, `a.interval[1]` -> interval."""
    parts = [p.split("[", 1)[0] for p in path.split(".")]
    return parts[-2] if parts[-1] in ("value", "stderr") and len(parts) > 1 else parts[-1]


def check_json(obj, ctx: Context) -> list[str]:
    """Every rule's breach in a predict or diagnose JSON object, as `rule path = value (limit)`."""
    found: list[str] = []
    _walk(obj, "", ctx, found)
    return found


def unjudged(obj, ctx: Context, path: str = "") -> list[str]:
    """The paths of the numeric fields no rule bounds (lists as `[]`): a value no rule could flag, found by judging
    a sentinel 1e300 at each numeric field. The sweep lists them, so a field that can carry an absurd number but
    has no rule is seen."""
    out: list[str] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += unjudged(value, ctx, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            out += [re.sub(r"\[\d+\]", "[]", p) for p in unjudged(value, ctx, f"{path}[{i}]")]
    elif isinstance(obj, float) or (isinstance(obj, int) and not isinstance(obj, bool)):
        out += [] if _judge(path, 1e300, ctx) else [path]
    return out


def _walk(obj, path: str, ctx: Context, found: list[str]) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            _walk(value, f"{path}.{key}" if path else str(key), ctx, found)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _walk(value, f"{path}[{i}]", ctx, found)
    elif isinstance(obj, float) or (isinstance(obj, int) and not isinstance(obj, bool)):
        found += _judge(path, float(obj), ctx)


def _judge(path: str, x: float, ctx: Context) -> list[str]:
    if not math.isfinite(x):
        return [f"non_finite {path} = {x}"]
    fit = _judge_fit(path, x, ctx)
    if fit is not None:
        return fit
    if any(path.startswith(raw) for raw in RAW_FIT) or ".theory_inputs" in path or "schedule" in path:
        return []
    owner, leaf, (lo, hi), w = _owner(path), _leaf(path), ctx.reach, ctx.width
    # a reward's end, value or level (not a step inside an end_reward object, nor its ratio or scale)
    if owner in REWARD_KEYS and leaf in (owner, "value", "after", "best", "level") or path.endswith(("interval[0]", "interval[1]")):
        if "task_prior" in path or "fall_chance" in path or "pilot_fall" in path:
            return []
        if leaf == "stderr":
            return [f"stderr {path} = {x:.4g} (> the reach's width {w:.4g})"] if x > w else []
        if not lo - 1e-9 * w <= x <= hi + 1e-9 * w:
            return [f"reward {path} = {x:.4g} (outside the reach [{lo:.4g}, {hi:.4g}])"]
        return []
    if leaf == "stderr" and owner in ("plateau",) + RISE_KEYS and x > w:
        return [f"stderr {path} = {x:.4g} (> the reach's width {w:.4g})"]
    if owner in RISE_KEYS and abs(x) > w:
        return [f"rise {path} = {x:.4g} (> the reach's width {w:.4g})"]
    if owner in STEP_KEYS and ("plateau" in path or owner == "time_to_plateau") and abs(x) > STEP_MULTIPLE * ctx.length:
        return [f"step {path} = {x:.4g} (> {STEP_MULTIPLE:g} x the run's {ctx.length:g} steps)"]
    if leaf in LR_KEYS and ctx.lr and x > LR_MULTIPLE * ctx.lr:
        return [f"lr_multiple {path} = {x:.4g} ({x / ctx.lr:.3g}x the pilot's lr, > {LR_MULTIPLE:g}x)"]
    return []


def _judge_fit(path: str, x: float, ctx: Context) -> list[str] | None:
    """The fit's parameters and standard errors (module docstring); None for any other path."""
    leaf, (lo, hi), w, steps = _leaf(path), ctx.reach, ctx.width, STEP_MULTIPLE * ctx.length
    if path.startswith(FIT_PARAMS) and leaf in FIT_REWARDS:
        return [] if lo - 1e-9 * w <= x <= hi + 1e-9 * w else [f"reward {path} = {x:.4g} (outside the reach [{lo:.4g}, {hi:.4g}])"]
    if path.startswith("fit.stderr.") and leaf in FIT_REWARDS:
        return [f"stderr {path} = {x:.4g} (> the reach's width {w:.4g})"] if x > w else []
    if path.startswith((*FIT_PARAMS, "fit.stderr.")) and leaf in FIT_TIMES:
        return [f"step {path} = {x:.4g} (> {STEP_MULTIPLE:g} x the run's {ctx.length:g} steps)"] if abs(x) > steps else []
    return None


# text: the phrases that carry a reward, a step or an lr multiple, as predict and diagnose print them
_TEXT_RULES = (
    ("reward", re.compile(r"plateau (?:at |is |R_inf = )?" + NUMBER, re.I)),
    ("reward", re.compile(r"reward over steps \d+-\d+[^:]*: " + NUMBER)),
    ("reward", re.compile(r"interval \[" + NUMBER + r", " + NUMBER + r"\]")),
    ("step", re.compile(r"(?:plateau|of it)[^;()]*? (?:from|by|at|reached at) step " + NUMBER)),
    ("lr_multiple", re.compile(r"(?:can rise |the linear model's bound, |oscillation \()" + NUMBER + r"x")),
    ("reward", re.compile(r"\b(?:r_inf|r0) = " + NUMBER)),
    ("stderr", re.compile(r"\b(?:r_inf|r0) = [^,;]*? \+- " + NUMBER)),
    ("step", re.compile(r"\btau = " + NUMBER + r"(?: \+- " + NUMBER + ")?")),
    ("rise", re.compile(r"(?<![\w/])(?<!can )(?:rise|climb|detectable_climb|remaining) " + NUMBER + r"(?!x)")),
)
_NON_FINITE = re.compile(r"(?<![\w.])[-+]?(nan|inf|infinity)(?![\w])", re.I)
_PROSE = re.compile(r" or ")


def check_text(text: str, ctx: Context) -> list[str]:
    """Every rule's breach in a predict or diagnose text (default or --explain), as `rule "line" (limit)`."""
    found: list[str] = []
    (lo, hi), w = ctx.reach, ctx.width
    for line in text.splitlines():
        if any(not _PROSE.match(line[m.end():]) and not line[:m.start()].endswith(("of ", "is "))
               for m in _NON_FINITE.finditer(line)):  # a value, not prose about one ("NaN or infinite", "a reward of inf")
            found.append(f"non_finite {line.strip()!r}")
        for rule, pattern in _TEXT_RULES:
            for match in pattern.finditer(line):
                for g in (g for g in match.groups() if g is not None):
                    x, tol = float(g), _half_unit(g) + 1e-9 * w  # as printed: rounded to its last digit
                    bad = {"reward": not lo - tol <= x <= hi + tol,
                           "stderr": x > w + tol, "rise": abs(x) > w + tol,
                           "step": abs(x) > STEP_MULTIPLE * ctx.length,
                           "lr_multiple": x > LR_MULTIPLE}[rule]
                    if bad:
                        found.append(f"{rule} {x:.4g} in {line.strip()!r}")
    return found


def _half_unit(printed: str) -> float:
    """Half a unit of the last digit a number was printed with ('5.35' -> 0.005, '2.8e+03' -> 50)."""
    mantissa, _, exponent = printed.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)
