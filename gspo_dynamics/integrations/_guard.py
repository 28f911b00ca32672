"""The live guard shared by the TRL callback and `gspo-dynamics watch`: a diagnosis whose cost does not grow with
the log, that says nothing before the log can support it, does not flicker, and says each thing once.

    guard = Guard()                      # GuardSettings(min_confidence=0.9, hold_rows=16)
    guard.add(chunk)                     # a RunLog of the rows logged since the last add
    news = guard.check()                 # a `Check`: the verdict now, and what is new (alerts) at this check
    guard.summary()                      # the run so far, for the end of the run or the watch

Cost. `add` costs O(new rows); the log is kept as a `LogView` of at most VIEW_ROWS rows (the log itself up to
there, block means past it). `check` re-diagnoses the view once the log grew by `cadence` rows since the last
diagnosis (1/DIAGNOSE_PARTS of its length, at least a view block) or a new row holds a non-finite value, else the last
diagnosis stands: one `diagnose` of at most VIEW_ROWS rows, whatever the log's length. Its closed-form fit starts from
the last diagnosis's optima (`fit.warm_start`: one bounded least-squares run per oscillator model and a probe for a
new oscillation, the multi-start only where a run ends above its nested model's cost) instead of batch's multi-start,
whose cost depends on how far it must search (about 5x a warm fit's, more on a smooth curve). Up to VIEW_ROWS rows the
view is the log, so a diagnosis is batch `diagnose`'s but for where the warm fit found another optimum; `summary`
always diagnoses every row read with batch's own fit (its verdict is batch diagnose's up to VIEW_ROWS rows).

Rules (stated once, named constants):

  no verdict before the log supports one   a trend verdict (healthy_saturation, still_rising, stalled,
                                           noise_dominated, or unsure between them) needs TREND_ROWS = 32 reward
                                           rows: diagnose's early and late windows are a quarter of the log each,
                                           and a quarter must hold MIN_ANALYSIS_POINTS (8), the fewest points the
                                           closed-form fit separates from noise; a cause mode (instability,
                                           degeneracy, concentration, hacking) needs the 8 diagnose itself needs.
                                           Until then the verdict is "pending".
  hysteresis                               a verdict (the headline, or a failure mode flagged at >= min_confidence)
                                           is reported, alerted or stops a run only once it has held at every
                                           diagnosis over the last hold_rows (16) rows: a reading that came and
                                           went within 12 rows (the flicker healthy -> instability 0.97 -> healthy
                                           over rows 42-53 of issue 50) never fires. The benign verdicts (healthy
                                           saturation, still rising, unsure between them) hold as one `family`.
  findings                                 read straight off the metrics (a NaN, a spike, truncation): reported the
                                           check they first appear, once (they stay in the summary).
  min_confidence                           MIN_CONFIDENCE = 0.9 for the callback and watch alike: diagnose's
                                           confidences are Platt-calibrated, and at >= 0.9 61 of 63 left-out
                                           verdicts were right (paper_repro diagnose-calibration); below 0.9 no band
                                           was checked, so an alert there would claim what was never measured;
                                           the reported verdict below it names no action either ("do nothing
                                           yet": a healthy saturation at 0.68 said "stop", and the run rose on).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.integrations._view import VIEW_ROWS, LogView
from gspo_dynamics.logs import MIN_ANALYSIS_POINTS, RunLog

MIN_CONFIDENCE = 0.9  # one default for the callback and watch (module docstring: the calibrated band)
HOLD_ROWS = 16  # a verdict holds this many rows before it is reported (twice the fit's 8 points; > the 12-row flicker)
TREND_ROWS = 4 * MIN_ANALYSIS_POINTS  # a trend verdict's early and late quarters hold the fit's 8 points each
HEALTHY_MODES = ("healthy_saturation", "still_rising")  # not failures
TREND_MODES = ("healthy_saturation", "still_rising", "stalled", "noise_dominated")
PENDING = "pending"  # no verdict yet
UNSURE = "unsure: "  # a verdict between modes: its line says what would tell, never an action
WAIT = ("nothing yet: its confidence is below {:g}, the level at which a verdict acts (stop, lower the lr, ...); "
        "later rows tell")
# A check diagnoses once the log grew by 1/64 of its length (or a view block, or a non-finite value arrived):
# diagnose's late window is a quarter of the log, so such a growth has replaced 1/16 of it; a verdict of the whole
# log moves no faster than that window. Up to 640 rows and every = 10 logs that is every check.
DIAGNOSE_PARTS = 64


@dataclass(frozen=True, kw_only=True)
class GuardSettings:
    """How the live guard decides what to say."""

    min_confidence: float = MIN_CONFIDENCE  # a failure mode is flagged (alerted, may stop a run) from this on
    hold_rows: int = HOLD_ROWS  # rows a verdict must hold at every diagnosis before it is reported
    view_rows: int = VIEW_ROWS  # the most rows one diagnosis reads (`LogView`)
    warm_start: bool = True  # a check's fit starts from the last check's optima (`fit.warm_start`); False: multi-start

    def __post_init__(self) -> None:
        if isinstance(self.min_confidence, bool) or not isinstance(self.min_confidence, (int, float)) \
                or not 0.0 <= self.min_confidence <= 1.0:
            raise ConfigError(f"min_confidence must be a number in [0, 1], got {self.min_confidence!r}")
        if isinstance(self.hold_rows, bool) or not isinstance(self.hold_rows, int) or self.hold_rows < 0:
            raise ConfigError(f"hold_rows must be a whole number of rows >= 0, got {self.hold_rows!r}")
        if not isinstance(self.warm_start, bool):
            raise ConfigError(f"warm_start must be True or False, got {self.warm_start!r}")
        if isinstance(self.view_rows, bool) or not isinstance(self.view_rows, int) or self.view_rows < 64:
            raise ConfigError(f"view_rows must be a whole number >= 64, got {self.view_rows!r}")


@dataclass(frozen=True)
class Alert:
    """One thing the guard says once: a failure mode that held, or a finding that appeared."""

    step: int
    name: str  # a failure mode (diagnose.MODES) or a finding (diagnose.FINDINGS)
    kind: str  # "mode" or "finding"
    confidence: float  # the verdict's; 1.0 for a finding (read off the metrics)
    text: str  # one line: what, then "do" the record's own first advice
    action: str  # that advice alone ("" when it has none)
    record: object = field(repr=False, compare=False, default=None)  # the Verdict or Finding


@dataclass(frozen=True)
class Check:
    """What one `Guard.check` found."""

    step: int  # the last step read
    rows: int  # log rows read
    verdict: str  # the reported (held) verdict: a mode, "unsure: a or b", PENDING or TOO_SHORT
    confidence: float | None  # its confidence at the last diagnosis; None while pending
    action: str | None  # the verdict's own first advice; None while pending
    changed: bool  # the reported verdict changed at this check
    previous: str | None  # the verdict reported before, when changed
    alerts: tuple[Alert, ...]  # new at this check: failure modes that held, findings that appeared
    flags: tuple[Alert, ...]  # every failure mode held now and every finding seen (as in `alerts`)
    diagnosis: object = field(repr=False, compare=False, default=None)  # the last Diagnosis (of the view)
    diagnosed: bool = False  # a diagnosis ran at this check


class Guard:
    """Incremental, hysteretic diagnosis of a growing log (module docstring)."""

    def __init__(self, settings: GuardSettings | None = None, *, hparams=None, reward_range=None,
                 diagnose_fn=None) -> None:
        self.settings = settings or GuardSettings()
        self.hparams = hparams
        self.reward_range = reward_range
        self._diagnose_fn = diagnose_fn
        self.view = LogView(self.settings.view_rows)
        self.diagnosis = None  # the last Diagnosis
        self.diagnoses = 0  # diagnoses run
        self.warm = False  # the last diagnosis's fit started from the one before (`fit.warm_start`), not batch's
        self.verdict = PENDING  # the reported verdict
        self._since: dict[str, int] = {}  # label -> rows read at the first diagnosis of its current streak
        self._rows_at_diagnosis = 0
        self._nonfinite_pending = False
        self._reported: tuple[float | None, str | None] = (None, None)
        self.flagged: dict[str, Alert] = {}  # name -> the alert that raised it (modes while held; findings stay)
        self.alerts: list[Alert] = []  # every alert, in order

    # ---- input ------------------------------------------------------------------------------------------------
    def add(self, chunk: RunLog) -> None:
        """The rows logged since the last `add` (a RunLog of those rows only; O(its rows))."""
        before = dict(self.view.diverged)
        rows = self.view.rows
        self.view.add(chunk)
        if self.view.rows > rows and (self.view.diverged != before or any(m.any() for m in chunk.logged_non_finite.values())):
            self._nonfinite_pending = True

    @property
    def rows(self) -> int:
        return self.view.rows

    @property
    def cadence(self) -> int:
        """New rows that make a check diagnose: a view block (s), and at least 1/DIAGNOSE_PARTS of the log."""
        return max(self.view.block, -(-self._rows_at_diagnosis // DIAGNOSE_PARTS))

    # ---- one check ----------------------------------------------------------------------------------------------
    def check(self, *, force: bool = False) -> Check:
        """Diagnose if due (`cadence` new rows, a new non-finite value, or `force`); report what is new."""
        new_rows = self.view.rows - self._rows_at_diagnosis
        due = self.view.rows > 0 and (force or self._nonfinite_pending or new_rows >= self.cadence
                                      or (self.diagnosis is None and new_rows > 0))
        alerts: list[Alert] = []
        previous = self.verdict
        if due:
            self._diagnose()
            alerts = self._update()
        step = self.view.last_step or 0
        conf, action = self._reported_confidence_action()
        changed = self.verdict != previous
        return Check(step, self.view.rows, self.verdict, conf, action, changed, previous if changed else None,
                     tuple(alerts), tuple(self.flagged.values()), self.diagnosis, due)

    def _diagnose(self, *, batch: bool = False, whole: RunLog | None = None) -> None:
        """Diagnose the view (or `whole`, the same rows unaveraged); its fit from the last diagnosis's optima unless
        `batch` (or no fit yet, or not `settings.warm_start`): then the multi-start, batch diagnose's own."""
        from gspo_dynamics.fit import warm_start

        if self._diagnose_fn is None:
            from gspo_dynamics.diagnose import diagnose

            self._diagnose_fn = diagnose
        log = self.view.run_log() if whole is None else whole
        previous = getattr(self.diagnosis, "fit", None) if self.settings.warm_start and not batch else None
        with warm_start(previous):
            self.diagnosis = (self._diagnose_fn(log, self.hparams, reward_range=self.reward_range)
                              if self.reward_range is not None else self._diagnose_fn(log, self.hparams))
        self.warm = previous is not None
        self.diagnoses += 1
        self._rows_at_diagnosis = self.view.rows
        self._nonfinite_pending = False

    def _update(self) -> list[Alert]:
        """Streaks, the reported verdict, and the alerts new at this diagnosis."""
        from gspo_dynamics.diagnose import FINDING_NOTE

        d, rows, s = self.diagnosis, self.view.rows, self.settings
        head = headline_label(d, rows)
        now = set() if head is None else {head, "family:" + family(head)}
        now |= {"mode:" + v.mode for v in d.verdicts
                if v.mode not in HEALTHY_MODES and v.confidence >= s.min_confidence and rows >= _min_rows(v.mode)}
        self._since = {label: self._since.get(label, rows) for label in now}
        held = {label for label, start in self._since.items() if rows - start >= s.hold_rows}
        # a verdict of another family (or the first) is reported once its family held; within the family the
        # verdict moves once the new one held on its own (still rising -> healthy is not a flicker to wait out twice)
        same = self.verdict != PENDING and head is not None and family(self.verdict) == family(head)
        if head is not None and (head in held if same else "family:" + family(head) in held):
            self.verdict = head
        if self.verdict in now:  # the reported verdict is today's reading too: its confidence and advice now
            v = d.verdicts[0]
            weak = v.confidence < s.min_confidence and not self.verdict.startswith(UNSURE)  # no action on a lean
            self._reported = (float(v.confidence), WAIT.format(s.min_confidence) if weak else
                              _first_advice(v) or _action(d))
        alerts = []
        for name in [m for m in list(self.flagged) if self.flagged[m].kind == "mode" and "mode:" + m not in held]:
            del self.flagged[name]  # a mode that went is flagged again when it holds again
        for v in d.verdicts:
            if "mode:" + v.mode in held and v.mode not in self.flagged:
                alerts.append(self._alert(v.mode, "mode", float(v.confidence), v))
        for f in getattr(d, "findings", None) or []:
            if f.severity != FINDING_NOTE and f.name not in self.flagged:
                alerts.append(self._alert(f.name, "finding", 1.0, f))
        return alerts

    def _alert(self, name: str, kind: str, confidence: float, record) -> Alert:
        step = self.view.last_step or 0
        action = _first_advice(record)
        if kind == "mode":
            what = f"{name.replace('_', ' ')} (confidence {confidence:.2f})"
        else:
            what = f"{record.summary} ({name})"
        text = f"step {step}: {what}" + (f" — do {action}" if action else "")
        alert = Alert(step, name, kind, confidence, text, action, record)
        self.flagged[name] = alert
        self.alerts.append(alert)
        return alert

    def _reported_confidence_action(self) -> tuple[float | None, str | None]:
        """The reported verdict's confidence and own advice, from the last diagnosis that gave it."""
        return self._reported if self.verdict != PENDING else (None, None)

    # ---- the end --------------------------------------------------------------------------------------------
    def summary(self, whole: RunLog | None = None) -> dict:
        """The run so far (at its end, an idle log or an interrupted watch): a final diagnosis of every row read
        (batch diagnose's up to VIEW_ROWS rows), what was reported, every alert. Schema: docs/watch.md.

        whole: every row read, unaveraged, where the caller keeps them (`watch`'s follower does): past VIEW_ROWS the
        final diagnosis reads it rather than the view's block means, so it is batch `diagnose`'s on the same rows (a
        rule at its threshold, such as a decayed lr's, reads the same values); one diagnosis of the whole log."""
        rows = whole is not None and self.view.block > 1 and whole.steps.size == self.view.rows  # the view's own rows
        if self.view.rows and (rows or self._rows_at_diagnosis != self.view.rows or self.warm):
            self._diagnose(batch=True, whole=whole if rows else None)  # batch's own fit, not a warm one
            self._update()
        means = self.view.block > 1 and not rows  # the final diagnosis read block means: said in the summary
        d = self.diagnosis
        final = None if d is None else headline_label(d, self.view.rows, final=True)
        first = None if d is None or not d.verdicts else d.verdicts[0]
        alerts = [{"step": a.step, "name": a.name, "kind": a.kind, "confidence": a.confidence} for a in self.alerts]
        if first is not None and final == first.mode and first.mode not in HEALTHY_MODES and \
                first.confidence >= self.settings.min_confidence and first.mode not in self.flagged:
            # every row read is the evidence: no streak of checks to wait out (a --once reading has one check). Said in
            # this summary only: the guard's state is not touched, so a later check alerts it once it holds
            alerts.append({"step": self.view.last_step, "name": first.mode, "kind": "mode",
                           "confidence": float(first.confidence)})
        return {
            "step": self.view.last_step, "rows": self.view.rows, "diagnoses": self.diagnoses,
            "verdict": final, "confidence": None if first is None else float(first.confidence),
            "action": None if d is None or first is None else (_do(d) or _first_advice(first)),
            "reported": self.verdict,
            "findings": [{"name": a.name, "step": a.step, "summary": a.record.summary}
                         for a in self.alerts if a.kind == "finding"],
            "alerts": alerts,
            "view_block": self.view.block, "block_means": means,
        }


def headline_label(diagnosis, rows: int, final: bool = False) -> str | None:
    """The headline verdict as the guard names it: the primary mode, "unsure: a or b", TOO_SHORT; None (pending)
    where the rows cannot support it yet (a trend verdict before TREND_ROWS; `final`: diagnose's own answer)."""
    from gspo_dynamics.diagnose import TOO_SHORT

    if diagnosis.primary == TOO_SHORT:
        return None if not final else TOO_SHORT
    unsure = getattr(diagnosis, "unsure", ())
    label = "unsure: " + " or ".join(unsure) if unsure else diagnosis.primary
    if not final and rows < _min_rows(diagnosis.primary):
        return None
    return label


def family(label: str) -> str:
    """The verdicts the hysteresis holds together: the benign ones (healthy saturation, still rising, unsure between
    them: a curve nearing its plateau swings between these), each other verdict alone."""
    modes = label.removeprefix("unsure: ").split(" or ")
    return "benign" if all(m in HEALTHY_MODES for m in modes) else label


def _min_rows(mode: str) -> int:
    return TREND_ROWS if mode in TREND_MODES else MIN_ANALYSIS_POINTS


def _action(diagnosis) -> str:
    return diagnosis.action() if hasattr(diagnosis, "action") else ""


def _do(diagnosis) -> str:
    """diagnose's own `do` line for the whole log (`Diagnosis.do`): a finding that invalidates the run first."""
    return diagnosis.do() if hasattr(diagnosis, "do") else _action(diagnosis)


def _first_advice(record) -> str:
    advice = getattr(record, "advice", None) or []
    return str(advice[0]) if advice else ""


def summary_line(summary: dict) -> str:
    """`Guard.summary` as one line, the answer first: `step N: verdict (confidence q) — do ...; summary: R rows, alerts:
    name at step s, ...` (the final verdict on every row read, diagnose's `do` for those rows, then what was alerted)."""
    verdict = summary["verdict"] or "no rows read"
    head = f"step {summary['step']}: {verdict.replace('_', ' ')}"
    if summary["confidence"] is not None and not verdict.startswith("unsure"):
        head += f" (confidence {summary['confidence']:.2f})"
    if summary["action"]:
        head += f" — do {summary['action']}"
    alerts = summary["alerts"]
    said = ("alerts: " + ", ".join(f"{a['name']} at step {a['step']}" for a in alerts)) if alerts else "no alerts"
    means = (f" (diagnosed on means of {summary['view_block']} rows each: diagnose LOG reads them one by one)"
             if summary.get("block_means") else "")
    return f"gspo-dynamics: {head}; summary: {summary['rows']} rows{means}, {said}"
