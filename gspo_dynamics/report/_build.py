"""`build_report(logs, ...)`: one run's or a sweep's report as facts (sections of lines and tables) plus charts.

The facts are built once and both pages render them (`_html`, `_markdown`), so the HTML and the markdown say the
same things; the charts (inline SVG) are the HTML's alone. Verdicts are diagnose's own objects (`Diagnosis`), the
forecast predict's, the accounting `_compute`'s; nothing here re-derives a verdict.
"""

from __future__ import annotations

from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.report._compute import account
from gspo_dynamics.report._divergence import partings
from gspo_dynamics.report._forecast import forecast_view
from gspo_dynamics.report._model import Report, RunReport, labels
from gspo_dynamics.report._sections import run_sections, sweep_sections


def truncation_masked(setup) -> bool | None:
    """Whether the run's trainer drops truncated completions from the loss, as its config says
    (`RunSetup.masks_truncated`); None without a config."""
    return None if setup is None else setup.masks_truncated


def build_report(logs: list, *, hparams=None, setup=None, reward_range=None, gpus: int | None = None,
                 rate: float | None = None, seconds_per_step: float | None = None, pilot_steps: int | None = None,
                 config_lines: tuple[str, ...] = (), per_log=None, title: str | None = None) -> Report:
    """The report of `logs` (RunLogs, one run or a sweep): each diagnosed with `hparams` and `reward_range`; with
    `setup` (a `predict.RunSetup`), predict's forecast on each; `gpus`, `rate` ($/GPU-hour) and `seconds_per_step`
    (for logs without step times) for the accounting;
    `config_lines`: how the config was read (shown as diagnose shows them); `per_log`: a function of a log giving
    its own (hparams, config_lines) in place of those two (the CLI's: the config's beta as the log dates it)."""
    names = labels([log.source for log in logs])
    runs = []
    for name, log in zip(names, logs):
        own, lines = per_log(log) if per_log is not None else (hparams, config_lines)
        d = diagnose(log, own, reward_range=reward_range)
        d.config_lines.extend(lines)
        view = None if setup is None else forecast_view(log, setup, pilot_steps=pilot_steps, reward_range=reward_range,
                                                        fit=d.fit)
        acc = account(log, d, gpus=gpus, rate=rate, seconds_per_step=seconds_per_step, masked=truncation_masked(setup))
        runs.append(RunReport(label=name, log=log, diagnosis=d, accounting=acc, forecast=view))
    if len(runs) == 1:
        answer, sections = run_sections(runs[0])
        return Report(title=title or f"gspo-dynamics report: {names[0]}", answer=answer, sections=sections,
                      runs=tuple(runs))
    parted = tuple((r.label, tuple(partings(runs[0].log, r.log))) for r in runs[1:])
    answer, sections = sweep_sections(runs, parted)
    return Report(title=title or f"gspo-dynamics report: {len(runs)} runs", answer=answer, sections=sections,
                  runs=tuple(runs), partings=parted)
