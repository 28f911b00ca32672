"""The report's sections for one run (`run_sections`) and for a sweep (`sweep_sections`): facts and charts.

One run: verdict (diagnose's answer and what it read, as `diagnose` prints them), curves (findings marked at their
steps), forecast (predict's, where a config is given), compute. A sweep: verdicts (a table with the end rewards),
where the runs part ways (each against the first, `_divergence`), the curves overlaid, forecast, compute (a table).
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.report._divergence import K_SE, METRICS, Parting
from gspo_dynamics.report._model import RunReport, Section, Table, finding_steps, present
from gspo_dynamics.report._svg import PALETTE, Band, Line, Marker, chart

FINDING_COLOR, STOP_COLOR, FLOOR_COLOR = "#d62728", "#2ca02c", "#9467bd"
HINT = "(gspo-dynamics diagnose LOG --explain: the evidence behind each verdict and finding, the fit and the notes)"


def _brief(run: RunReport) -> tuple[str, ...]:
    """diagnose's own brief answer (`Diagnosis.report_lines(explain=False)`), blank lines out, its hint for the CLI's."""
    lines = [ln for ln in run.diagnosis.report_lines(explain=False) if ln.strip()]
    return tuple(HINT if ln.startswith("(--explain") else ln for ln in lines)


def _markers(run: RunReport, name: str, color: str | None = None, prefix: str = "") -> list[Marker]:
    """The findings at their steps; on the reward the step learning stopped, on the entropy its floor."""
    out = [Marker(s, f"{prefix}{what}", color or FINDING_COLOR) for s, what in finding_steps(run.diagnosis)]
    acc = run.accounting
    if name == "reward" and acc.stop_step is not None:
        out.append(Marker(acc.stop_step, f"{prefix}learning stopped", color or STOP_COLOR))
    if name == "entropy" and acc.entropy is not None and acc.entropy.reached:  # one past the log: in the text only
        out.append(Marker(acc.entropy.step, f"{prefix}entropy floor", color or FLOOR_COLOR))
    return out


def _curve_section(runs: list[RunReport]) -> Section:
    shown, absent = present([r.log for r in runs])
    one = len(runs) == 1
    charts = []
    for name, title in shown:
        lines = [Line(r.label, r.log.steps, r.log[name], PALETTE[i % len(PALETTE)], key=str(i + 1))
                 for i, r in enumerate(runs) if name in r.log]
        markers = [m for i, r in enumerate(runs) for m in _markers(r, name, None if one else PALETTE[i % len(PALETTE)],
                                                                      "" if one else f"{i + 1}: ")]
        charts.append(chart(title, lines, markers))
    facts = [f"shown: {', '.join(t for _, t in shown)}", f"absent from the log{'' if one else 's'}: "
             f"{', '.join(absent) if absent else 'none'}"]
    for i, r in enumerate(runs):
        marks = [f"{m.label} at step {m.step:.0f}" for m in _markers(r, "reward") + _markers(r, "entropy")]
        marks = list(dict.fromkeys(marks))  # the findings appear on both lists
        if marks:
            facts.append(f"marked{'' if one else f' ({i + 1}) ' + r.label}: {'; '.join(marks)}")
    if not one:
        facts.append("runs: " + ", ".join(f"{i + 1} {r.label}" for i, r in enumerate(runs)))
    return Section("curves", "Curves", tuple(facts), charts=tuple(charts))


def _forecast_chart(run: RunReport) -> str:
    view = run.forecast
    lines = [Line(run.label, run.log.steps, run.log["reward"], PALETTE[0], key="reward")]
    if view.curve is not None:
        lines.append(Line("the pilot's fit", view.curve[0], view.curve[1], "#555555", dashed=True))
    if view.end is not None:
        start, stop, value = view.end
        lines.append(Line("predict's end reward", np.array([start, stop]), np.array([value, value]), "#d62728",
                          key="forecast"))
    band = None if view.band is None else Band(*view.band, label="predict's end-of-run interval")
    markers = [] if view.pilot_end is None else [Marker(view.pilot_end, "pilot ends")]
    return chart("reward and predict's forecast", lines, markers, band)


def _forecast_section(runs: list[RunReport]) -> Section:
    if all(r.forecast is None for r in runs):
        return Section("forecast", "Forecast", ("no forecast band: give the run's config (--config) and the report "
                                                "shows predict's forecast from the log's first part",))
    if len(runs) == 1:
        run = runs[0]
        charts = (_forecast_chart(run),) if run.forecast.curve is not None else ()
        return Section("forecast", "Forecast", run.forecast.lines, charts=charts)
    facts = ["the config given is read as every run's"]
    facts += [f"{r.label}: {line}" for r in runs for line in r.forecast.lines[:2] + tuple(
        ln for ln in r.forecast.lines if ln.startswith("forecast: reward"))]
    return Section("forecast", "Forecast", tuple(facts))


def run_sections(run: RunReport) -> tuple[tuple[str, ...], tuple[Section, ...]]:
    """(the answer, the sections) of a one-run report."""
    answer = tuple(run.diagnosis.headline()[:2])
    verdict = Section("verdict", "Verdict", _brief(run))
    compute = Section("compute", "Compute without learning signal", tuple(run.accounting.lines()))
    return answer, (verdict, _curve_section([run]), _forecast_section([run]), compute)


def _verdict_table(runs: list[RunReport]) -> Table:
    rows = []
    for r in runs:
        d = r.diagnosis
        verdict = d.headline()[0].removeprefix("verdict").strip()
        found = ", ".join(f.name.replace("_", " ") for f in d.findings if f.severity != "note") or "none"
        end = "n/a" if r.end_reward is None else f"{r.end_reward:.4g}"
        rows.append((r.label, verdict, "" if d.primary == "too_short" else d.action(), found, end, str(len(r.log.steps))))
    return Table(("run", "verdict", "do first", "findings", "end reward (last 8 rows)", "rows"), tuple(rows))


def _parting_text(p: Parting) -> str:
    when = f"from the first full window on (step {p.step})" if p.from_start else f"at step {p.step}"
    return f"{p.metric} {when} (z = {p.z:+.1f}, |z| >= {p.min_abs_z:.1f} from there)"


def _parting_section(runs: list[RunReport], parted) -> Section:
    base = runs[0].label
    rows = []
    for label, ps in parted:
        first = next((p for p in ps if p.parts), None)
        others = "; ".join(_parting_text(p) for p in ps if p.parts and p is not first) or "none"
        tested = [p for p in ps if not p.reason]
        same = ", ".join(p.metric for p in tested if not p.parts) or "none"
        verdict = (_parting_text(first) if first is not None else "do not part ways" if tested else
                   f"not compared ({ps[0].reason})" if ps else "not compared (no metric both log)")
        rows.append((label, verdict, others, same))
    facts = [f"each run against the first, {base}: the first step from which the rolling means of a metric stay more "
             f"than {K_SE:g} pooled standard errors apart to the end (metrics: {', '.join(METRICS)} where both log them)"]
    if all(r[1] == "do not part ways" for r in rows):
        facts.append(f"the runs do not part ways from {base} on any metric")
    return Section("part-ways", "Where the runs part ways", tuple(facts),
                   (Table(("run", f"parts from {base}", "also parts on", "does not part on"), tuple(rows)),))


def _compute_table(runs: list[RunReport]) -> Section:
    rows, facts = [], [f"{w.name}: {w.why}" for w in runs[0].accounting.wastes[:2]]
    for r in runs:
        a = r.accounting
        share = {w.name: "n/a" if w.share is None else f"{w.share:.1%}" for w in a.wastes}
        hours = "n/a" if a.hours is None else f"{a.gpu_hours:.3g} GPU-h" if a.gpu_hours is not None else f"{a.hours:.3g} h"
        floor = "n/a" if a.entropy is None else (f"step {a.entropy.step:.0f} +- {a.entropy.step_se:.0f}"
                                                 if a.entropy.identified else "not identified")
        least = "at least " if any(w.share is None for w in a.wastes) else ""
        rows.append((r.label, least + a.total_text(), *share.values(), hours, floor))
        facts.append(f"{r.label}: stopped learning: {a.wastes[2].why}")
        facts += [f"{r.label}: {a.entropy.text()}"] if a.entropy is not None else []
        facts += [f"{r.label}: note: {n}" for n in a.notes]
    names = tuple(w.name for w in runs[0].accounting.wastes)
    table = Table(("run", "no signal", *names, "logged compute", "entropy floor"), tuple(rows))
    facts.insert(0, _sweep_total([r.accounting for r in runs]))
    return Section("compute", "Compute without learning signal", tuple(facts), (table,))


def _sweep_total(accounts) -> str:
    """The sweep's compute and its part without signal, summed over the runs that log step times."""
    timed = [a for a in accounts if a.hours is not None]
    if not timed:
        return "the sweep: no run logs step times (TRL step_time, verl timing_s/step): shares only"
    gpu = all(a.gpu_hours is not None for a in timed)
    total = sum(a.gpu_hours if gpu else a.hours for a in timed)
    lo, hi = (sum(a.total[k] * (a.gpu_hours if gpu else a.hours) for a in timed) for k in (0, 1))
    unit = "GPU-hours" if gpu else "h of wall-clock"
    span = f"{lo:.3g}" if f"{lo:.3g}" == f"{hi:.3g}" else f"{lo:.3g}-{hi:.3g}"
    cost = f" (${lo * timed[0].rate:,.2f}-${hi * timed[0].rate:,.2f})" if gpu and timed[0].rate is not None else ""
    return (f"the sweep: {total:.3g} {unit} logged over {len(timed)} of {len(accounts)} runs, {span} of them without "
            f"learning signal{cost}")


def sweep_sections(runs: list[RunReport], parted) -> tuple[tuple[str, ...], tuple[Section, ...]]:
    """(the answer, the sections) of a sweep's report."""
    counts: dict[str, int] = {}
    for r in runs:
        verdict = r.diagnosis.headline()[0].removeprefix("verdict").strip().split(" (confidence")[0].split(" — ")[0]
        counts[verdict] = counts.get(verdict, 0) + 1
    parts = [(label, next((p for p in ps if p.parts), None)) for label, ps in parted]
    parts = [f"{label} at step {p.step} ({p.metric})" for label, p in parts if p is not None]
    compared = any(not p.reason for _, ps in parted for p in ps)
    answer = (f"verdicts   {len(runs)} runs: " + ", ".join(f"{n} {v}" for v, n in counts.items()),
              f"part ways  from {runs[0].label}: " + ("; ".join(parts) if parts else "none (the runs do not part ways)"
                                                        if compared else "not compared (too few common rows)"))
    verdicts = Section("verdict", "Verdicts", (), (_verdict_table(runs),))
    return answer, (verdicts, _parting_section(runs, parted), _curve_section(runs), _forecast_section(runs),
                    _compute_table(runs))
