"""The result types of `diagnose`: one `Verdict` per failure mode found, gathered in a `Diagnosis`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gspo_dynamics._plain import plain as _plain
from gspo_dynamics.diagnose._evidence_text import _column_lines, _evidence_text, _fmt, _side_text
from gspo_dynamics.diagnose._finding import INVALIDATES, NOTE
from gspo_dynamics.fit import max_safe_text
from gspo_dynamics.predict import hparams_text

# Symptom modes: what the reward curve does. Exactly one of them describes every analysed run.
TREND_MODES: tuple[str, ...] = ("healthy_saturation", "still_rising", "stalled", "noise_dominated")
# Cause modes: mechanisms behind a bad curve. Any number may co-occur.
CAUSE_MODES: tuple[str, ...] = ("dynamical_instability", "advantage_degeneracy", "policy_concentration", "reward_hacking")
MODES: tuple[str, ...] = (
    "healthy_saturation", "still_rising", "stalled", "dynamical_instability", "advantage_degeneracy",
    "policy_concentration", "reward_hacking", "noise_dominated",
)
SCHEMA_VERSION = "1.1"  # of `Diagnosis.to_json` (docs/outputs.md): within a version fields are only added
TOO_SHORT = "too_short"
# A cause is reported, and can be primary, from this confidence on (its signal at its threshold).
REPORT_CONFIDENCE = 0.5
# the one thing to do when the primary verdict advises nothing
NOTHING_TO_DO = {"healthy_saturation": "nothing to change: the reward reached its plateau (stop, or harder prompts "
                                       "to go further)"}
# below this a saturation's "stop" is not said as a fact: at and above it 61 of 63 held-out verdicts were right
# (docs/validation.md, diagnose-calibration); below it no band was checked, and a slow second rise after an early
# one reads as a plateau on the rows before it
CHECKED_CONFIDENCE = 0.9  # the live guard's MIN_CONFIDENCE is the same band (integrations._guard)
LEANING = {"healthy_saturation": "nothing to change yet: the reward looks to have reached its plateau, at a confidence "
                                 f"({{:.2f}}) under the {CHECKED_CONFIDENCE:g} checked on real runs, so train on a while "
                                 "before you stop (a slow later rise is not ruled out)"}
# findings whose cause acts whatever the verdict's remedy, so their check comes first on the do line: a reward that
# pays short answers (length_collapse) drives the completions toward empty at any learning rate
CHECK_FIRST = ("length_collapse",)
# a group policy-gradient run's own readings beside its reward (`_guessed_reward`): a log with none of them and no
# column named as a reward may be no RL run at all (a supervised trainer's accuracy)
GRPO_READINGS = frozenset({"reward_std", "frac_zero_std", "kl_ref", "kl_old_new", "entropy", "clip_frac", "mean_length"})
# what tells apart the modes of an unsure answer (`Verdict.unsure`), said on the verdict line
UNSURE_TELLS = {frozenset(("still_rising", "healthy_saturation")): "a longer run tells",
                frozenset(("stalled", "noise_dominated")): "more samples per step or a longer run tell",
                frozenset(("still_rising", "stalled")): "a longer run tells"}


FELL = "the reward fell (Welch z, late - early)"  # the item a rise or saturation reading carries as context of a fall


# the instability's falls by their signal's start (`_fall.fall_evidence`, `_signal_lost`): `_ranking` and
# `_flat_beside_fall` read them
FALL_ITEMS = ("late drop below the peak", "sustained drop below the peak", "reward fell from the start",
              "reward fell to its floor")


def _fell_context(verdict) -> bool:
    """Whether a rise or saturation reading is kept only as the context of a fall (it carries the FELL item)."""
    return verdict.mode in ("healthy_saturation", "still_rising") and any(e["signal"] == FELL for e in verdict.evidence)


def _flat_beside_fall(verdict, primary) -> bool:
    """Whether `verdict` is a flat reading (stalled or noise-dominated, sure or unsure) beside a primary instability
    at REPORT_CONFIDENCE whose fall item holds: a change the data show is no stall and is not hidden by noise."""
    flat = {verdict.mode, *verdict.unsure} <= {"stalled", "noise_dominated"}
    return flat and primary.mode == "dynamical_instability" and primary.confidence >= REPORT_CONFIDENCE and any(
        e["signal"].startswith(FALL_ITEMS) and e.get("holds", True) for e in primary.evidence)


def confidence(excess: float, scale: float) -> float:
    """Logistic confidence 1 / (1 + exp(-excess / scale)): 0.5 at the threshold (excess = 0),
    0.73 one `scale` past it, 0.95 three `scale`s past it. excess > 0 is the failing direction."""
    if not math.isfinite(excess):
        return 1.0 if excess > 0 else 0.0
    return 1.0 / (1.0 + math.exp(-max(min(excess / scale, 50.0), -50.0)))


SUCCESS_RATE_TOL = 1e-6  # rewards within [0, 1] up to this are a success rate (`_signals.success_rate`)


def reward_reach(reward, given: tuple[float, float] | None) -> tuple[float, float] | None:
    """What the reward can reach: the range given (--reward-range), else [0, 1] when every logged reward lies in
    it (a success rate or a [0, 1] score), else None (unknown). A fitted plateau beyond it is not a number to print."""
    if given is not None:
        return float(given[0]), float(given[1])
    values = [float(r) for r in reward if math.isfinite(r)]
    if values and min(values) >= -SUCCESS_RATE_TOL and max(values) <= 1.0 + SUCCESS_RATE_TOL:
        return 0.0, 1.0
    return None


# "|<=" and "|<": the value's magnitude (|v| <= t, |v| < t), for a reading that fails on either side of 0 (a plateau:
# neither a remaining rise nor an overshoot past it, a late half neither climbing nor falling)
SIDES = {">": lambda v, t: v > t, ">=": lambda v, t: v >= t, "<": lambda v, t: v < t, "<=": lambda v, t: v <= t,
         "|<=": lambda v, t: abs(v) <= t, "|<": lambda v, t: abs(v) < t}


def evidence(signal: str, value, steps, threshold=None, side: str | None = None, caveat: bool = False, **extra) -> dict:
    """One piece of evidence: the signal's name, its value, the [first, last] steps it used, the threshold.

    side: how the value must stand to the threshold for the verdict it supports (">", ">=", "<", "<=", or on its
    magnitude "|<=", "|<"); the item then carries "holds" (NaN never holds). caveat: an item that qualifies the
    verdict (a noisy fit under a significant rise) rather than supports it: shown, and exempt from
    `Verdict.contradictions`."""
    item = {"signal": signal, "value": value, "steps": [int(steps[0]), int(steps[1])] if steps is not None else None}
    if threshold is not None:
        item["threshold"] = threshold
    if side is not None:
        if side not in SIDES or threshold is None:
            raise ValueError(f"side must be one of {', '.join(SIDES)} with a threshold, got {side!r}")
        item["side"] = side
        item["holds"] = bool(SIDES[side](float(value), float(threshold))) if _real(value) else False
    if caveat:
        item["caveat"] = True
    item.update(extra)
    return item


def _real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


@dataclass(frozen=True)
class Verdict:
    """One failure mode found in a run."""

    mode: str  # one of MODES
    confidence: float  # in [0, 1]
    evidence: list[dict]  # {"signal", "value", "steps": [first, last], "threshold", ...}
    advice: list[str]  # concrete: which hyperparameter, which direction, how much where the theory says
    # the modes the evidence does not separate (`mode` among them; empty when sure): the answer is then "unsure: a or
    # b", its advice only what would tell them apart
    unsure: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {', '.join(MODES)}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {self.confidence}")
        if self.unsure and (self.mode not in self.unsure or any(m not in MODES for m in self.unsure)):
            raise ValueError(f"unsure must hold the mode {self.mode!r} and other modes, got {self.unsure!r}")

    def to_json(self) -> dict:
        return _plain({"mode": self.mode, "confidence": self.confidence, "evidence": self.evidence, "advice": self.advice,
                       "unsure": list(self.unsure)})

    def contradictions(self) -> list[dict]:
        """The items of its own evidence that do not hold (side given, not a caveat): a verdict reported with
        any is printed against its evidence (`inconsistencies`)."""
        return [e for e in self.evidence if e.get("holds") is False and not e.get("caveat")]


@dataclass(frozen=True)
class Diagnosis:
    """The verdicts on one run log, with the fit and what it implies."""

    primary: str  # one of MODES, or "too_short"
    verdicts: list[Verdict]  # sorted by confidence, highest first
    fit: object | None  # TrajectoryFit, or None (too short, or the fit failed)
    implications: object | None  # Implications, or None
    log_summary: dict  # source, format, trainer, version, rows, logging interval, reward_std kind
    not_checked: list[str] = field(default_factory=list)  # "mode: why it could not be checked"
    notes: list[str] = field(default_factory=list)  # other observations and assumptions
    hparams: object | None = None  # the Hyperparams used, or None
    theory: dict = field(default_factory=dict)  # inputs of theory overlays (e.g. G used for p^G + (1-p)^G)
    log: object | None = field(default=None, repr=False, compare=False)  # the RunLog (for plots; not in JSON)
    findings: list = field(default_factory=list)  # `_findings.Finding`s, most severe first
    config_lines: list[str] = field(default_factory=list)  # --config's unknown keys read past and defaults taken
    # (predict's first lines, `RunSetup.brief_lines`): shown under the verdict; in JSON among the notes

    @property
    def unsure(self) -> tuple[str, ...]:
        """The modes the evidence does not separate (the primary verdict's `Verdict.unsure`); () when sure."""
        return self.verdicts[0].unsure if self.verdicts and self.primary != TOO_SHORT else ()

    def action(self) -> str:
        """The one thing to do: fix what invalidates the run first; else the primary verdict's first advice, after
        the check of a finding whose cause acts whatever the verdict's remedy (`CHECK_FIRST`)."""
        first = self._invalidating()
        if first is not None:
            return first.advice[0]
        check = next((f for f in self.findings if f.name in CHECK_FIRST and f.severity != NOTE and f.advice), None)
        if not (self.verdicts and self.verdicts[0].advice):
            if check:
                return check.advice[0]
            sure = not self.verdicts or self.verdicts[0].confidence >= CHECKED_CONFIDENCE
            lean = LEANING.get(self.primary) if not sure else None
            return lean.format(self.verdicts[0].confidence) if lean else \
                NOTHING_TO_DO.get(self.primary, "nothing the log points to")
        remedy = self.verdicts[0].advice[0]
        if check is None:
            return remedy
        return f"first {check.advice[0]}; if the reward is not the cause: {remedy}"

    def _invalidating(self):
        """The first finding that invalidates the run and says what to do, or None."""
        return next((f for f in self.findings if f.severity == INVALIDATES and f.advice), None)

    def do(self, where: str = "") -> str:
        """The `do` line: the action, and where it fixes a finding that invalidates the numbers the verdict read, that
        the finding comes first and the verdict is read again after it; `where` points at it (" (below)")."""
        if self._invalidating() is None:
            return self.action()
        return f"first fix what invalidates the run{where}: {self.action()}; then diagnose again"

    def headline(self) -> list[str]:
        """The answer first (the report's and the figure's first lines): the verdict, the one thing to do, then
        each finding, those that invalidate the run before the others."""
        if self.primary == TOO_SHORT and not self.log_summary.get("reward_points") and any(  # rows, none a number
                e["signal"] == "reward NaN or infinite (rows)" for f in self.findings for e in f.evidence):
            lines = ["verdict    no reward to analyse: the reward is NaN or infinite on every row (below)"]
        elif self.primary == TOO_SHORT:
            s = self.log_summary
            lines = [f"verdict    too short to analyse: {s.get('reward_points', 0)} reward points "
                     f"(at least {s.get('min_points')} are needed to fit a trajectory)"]
        elif self.unsure:
            tells = UNSURE_TELLS.get(frozenset(self.unsure), "a longer run tells")
            lines = [f"verdict    unsure: {' or '.join(m.replace('_', ' ') for m in self.unsure)} — {tells}",
                     f"do         {self.do(' (below)')}"]
        else:
            lines = [f"verdict    {self.primary.replace('_', ' ')} (confidence {self.verdicts[0].confidence:.2f})",
                     f"do         {self.do(' (below)')}"]
        for f in self.findings:
            if f.severity != NOTE:
                lines.append(f"{'invalid' if f.severity == INVALIDATES else 'finding':<10} {f.summary}")
        return lines

    def verdict(self, mode: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.mode == mode), None)

    def to_json(self) -> dict:
        """A plain JSON-serialisable dict (inf/NaN become None)."""
        hp = None
        if self.hparams is not None:
            from dataclasses import asdict

            hp = asdict(self.hparams)
            hp["optimizer"] = {"name": self.hparams.optimizer.name, **asdict(self.hparams.optimizer)}
        implications = None if self.implications is None else self.implications.to_json()
        if self.theory:  # the theory's inputs (the G of the zero-std law) sit with its other numbers: one place
            implications = {**(implications or {}), "theory_inputs": self.theory}
        return _plain({
            "schema_version": SCHEMA_VERSION,
            "verdict": "unsure" if self.unsure else self.primary,  # the headline's: what a script should read
            "primary": self.primary,
            "unsure": list(self.unsure),
            "verdicts": [v.to_json() for v in self.verdicts],
            "fit": None if self.fit is None else self.fit.to_json(*self._fit_reading()),
            "implications": implications,
            "log": self.log_summary,
            "not_checked": self.not_checked,
            "notes": self.notes,
            "hparams": hp,
            "findings": [f.to_json() for f in self.findings],
            "action": None if self.primary == TOO_SHORT else self.action(),
        })

    def report_lines(self, explain: bool = True) -> list[str]:
        """A readable report: the verdict first, then (explain) the evidence, advice, fit and what was not checked,
        else one line naming the other verdicts and findings and where their evidence is (a log too short to fit
        has neither: the reason and the notes)."""
        lines = self._read_lines(explain)
        if self.primary == TOO_SHORT:
            return self._answer_lines() + lines + [f"note       {n}" for n in self.notes]
        if not explain:
            return self._brief_lines()
        lines = self._answer_lines() + [""] + lines
        for f in self.findings:
            lines.append("")
            lines.append(f"<{f.name.replace('_', ' ')}>  {f.severity}")
            if f.severity == NOTE:  # a warning's summary heads the report; a note's is said only here
                lines.append("  " + f.summary)
            lines += ["  - " + _evidence_text(e) for e in f.evidence]
            lines += ["  > " + a for a in f.advice]
        for v in self.verdicts:
            lines.append("")
            name = f"unsure: {' or '.join(m.replace('_', ' ') for m in v.unsure)}" if v.unsure else v.mode.replace('_', ' ')
            lines.append(f"[{name}]  confidence {v.confidence:.2f}")
            for e in v.evidence:
                lines.append("  - " + _evidence_text(e))
            for a in v.advice:
                lines.append("  > " + a)
        if self.fit is not None:
            f, imp = self.fit, self.implications
            lines.append("")
            lines.append(f"fit        {f.variant} ({f.regime}), R^2 = {f.r_squared:.3f}, "
                         f"BIC exponential - oscillator = {_fmt(round(f.selection['delta_bic'], 1))}; "
                         f"inertia {'supported' if f.inertia else 'not supported'}, "
                         f"oscillation {'supported' if f.oscillation else 'not supported'}")
            lines.append("           " + f.params_text(*self._fit_reading()))
            if imp is not None:
                lines.append(self._plateau_line())
                if imp.damping_margin is not None:
                    lines.append(f"theory     stiffness/step {imp.stiffness_per_step}, damping margin {imp.damping_margin} "
                                 f"({imp.damping_margin_source}), refresh interval {imp.refresh_interval}, "
                                 f"max safe T {max_safe_text(imp)}")
        if self.not_checked:
            lines.append("")
            lines += [f"not checked  {n}" for n in self.not_checked]
        if self.notes:
            lines.append("")
            lines += [f"note       {n}" for n in self.notes]
        return lines

    def _fit_reading(self) -> tuple[tuple[float, float] | None, str | None]:
        """(reach, plateau_why) for `TrajectoryFit.unidentified_params`: the reward's reach as the plateau line
        judges it, the plateau as the implications do."""
        imp = self.implications
        reach = reward_reach(self.log["reward"] if self.log is not None else [], None if imp is None else imp.reward_range)
        return reach, None if imp is None else imp.unidentified.get("plateau")

    def _plateau_line(self) -> str:
        """The fitted plateau and when it comes, within what the reward can reach: a plateau past a bound of the
        reward's range (`Implications.reward_range`, or [0, 1] for a success rate) is said to be at that bound, not
        given as a number; where the verdict is unsure whether the rise goes on, the fit's "reached" is the fit's."""
        imp, r_inf = self.implications, self.fit.params["r_inf"]
        bounds = reward_reach(self.log["reward"] if self.log is not None else [], imp.reward_range)
        if bounds is not None and not bounds[0] <= r_inf <= bounds[1]:
            bound = bounds[1] if r_inf > bounds[1] else bounds[0]
            given = "" if imp.reward_range is not None else ", the [0, 1] read from the rewards (--reward-range gives yours)"
            return (f"plateau    at the reward's bound {bound:g}{given} (the fit's plateau lies past what the reward "
                    "can reach: not a measurement)")
        if "plateau" in imp.unidentified:
            return f"plateau    not identified ({imp.unidentified['plateau']})"
        if "time_to_plateau" in imp.unidentified:
            return f"plateau    {imp.plateau}; when it comes is not identified ({imp.unidentified['time_to_plateau']})"
        reached = "reached" if imp.plateau_reached else "not yet reached"
        if "still_rising" in self.unsure:
            reached = f"{reached} by the fit; the data do not settle whether the rise goes on"
        return f"plateau    {imp.plateau}, reached within 5% at step {imp.time_to_plateau} ({reached})"

    def _read_lines(self, explain: bool = False) -> list[str]:
        """What was read: the log (how its steps were found, its evaluation rows, which of its runs), which column
        became which series and how many were left unread (`explain`: which), and the hyperparameters the theory's
        numbers rest on (given, or from --config)."""
        s = self.log_summary
        name = f", {s['run_name']!r}" if s.get("run_name") else ""
        runs = (f"; run {s['run_index']}{name} of {s['n_runs']} in the file (--run K picks another)"
                if s.get("n_runs", 1) > 1 else "")
        evals = f"; {s['eval_points']} evaluation rows read apart" if s.get("eval_points") else ""
        axis = f"; steps: {s['step_axis']}" if s.get("step_axis") else ""
        axis += "".join(f"; {aside}" for aside in s.get("set_aside", ()))  # rows not read as points: never silent
        lines = [f"log        {s.get('source')}  ({s.get('format')}, trainer {s.get('trainer')}"
                 f"{', version ' + str(s['version']) if s.get('version') else ''}, {s.get('rows')} rows"
                 f"{', logged every ' + str(s['logging_interval']) + ' steps' if s.get('logging_interval') not in (None, 1) else ''}"
                 f"{axis}{evals}{runs})"]
        if "columns" in s:
            lines += _column_lines(s, explain)
        if self.hparams is not None:
            lines.append(f"hparams    {hparams_text(self.hparams)}")
        return lines

    def _answer_lines(self) -> list[str]:
        """The headline, then --config's unknown keys read past and the defaults taken, and a reward the reader picked
        (`RunLog.reward_guessed`): part of the answer, as in predict's first lines."""
        return self.headline() + [f"config     {line}" for line in self.config_lines] + self._guessed_reward()

    def _guessed_reward(self) -> list[str]:
        """Where no column is the reward by its name: which one the answer read as the reward, the map that names
        another, and, where nothing else in the log is a group policy-gradient run's own reading (GRPO_READINGS),
        that the answer holds only if the log is one."""
        s = self.log_summary
        if not s.get("reward_guessed"):
            return []
        column = next((c["column"] for c in s.get("columns", ()) if c["series"] == "reward"), "?")
        line = (f"reward     {column!r} is read as the reward: no column is named as one (--map reward=COLUMN names "
                "another)")
        if not set(s.get("series", ())) & GRPO_READINGS:
            line += ("; nothing else in the log is a GRPO run's own (reward_std, KL, entropy, clip fraction, "
                     "completion length): the verdict holds only if this is an RL run's reward")
        return [line]

    def _brief_lines(self) -> list[str]:
        """The answer (`headline`), what was read, and the other verdicts and findings by name (a verdict at a
        confidence that prints as 0.00 is none, and a rise or saturation kept only as context of a fall (`FELL`)
        is not one either, nor a flat reading beside a fall the instability holds (`_flat_beside_fall`): none is
        named; --explain keeps their evidence)."""
        read = self._read_lines()
        others = [f"unsure: {' or '.join(m.replace('_', ' ') for m in v.unsure)}" if v.unsure
                  else f"{v.mode.replace('_', ' ')} ({v.confidence:.2f})" for v in self.verdicts[1:]
                  if (v.unsure or round(v.confidence, 2) > 0) and not _fell_context(v)
                  and not _flat_beside_fall(v, self.verdicts[0])]
        others += [f"note: {f.name.replace('_', ' ')}" for f in self.findings if f.severity == NOTE]  # the rest: headline
        others += [f"{n.split(': ', 1)[0]} undecided without G (--explain)" for n in self.not_checked
                   if "undecided without the run's G" in n]  # `_signals.UNDECIDED_WITHOUT_G`: evidence G would decide
        also = [f"also       {', '.join(others)}"] if others else []
        return (self._answer_lines() + [""] + read + also
                + ["(--explain: the evidence behind each verdict and finding, the fit and the notes)"])


def inconsistencies(diagnosis: Diagnosis) -> list[str]:
    """Every printed verdict's evidence that does not hold (`Verdict.contradictions`), as text; [] when the
    verdicts agree with their evidence. diagnose checks it under GSPO_DYNAMICS_STRICT=1 (the tests set it)."""
    return [f"{v.mode}: {failing}" for v in diagnosis.verdicts for failing in failing_evidence(v)]


def failing_evidence(verdict: Verdict) -> list[str]:
    """A verdict's evidence that does not hold (`Verdict.contradictions`), as text: `signal = value, needs side x`."""
    return [f"{e['signal']} = {_fmt(e['value'])}, needs {_side_text(e['side'])} {_fmt(e['threshold'])}"
            for e in verdict.contradictions()]
