"""One run's or a sweep's report: a self-contained HTML page and markdown, and the compute a run spent without
learning signal.

    report = build_report([read_log("a/trainer_state.json"), read_log("b/trainer_state.json")], gpus=8, rate=2.99)
    to_html(report), to_markdown(report), report.answer, report.sections
    account(log, diagnose(log), gpus=8, rate=2.99).lines()     # the compute accounting (`_compute`)
    entropy_floor(log.steps, log["entropy"])                   # the step the entropy levels off (`_entropy_floor`)
    partings(log_a, log_b)                                     # where two runs part ways (`_divergence`)

Verdicts are diagnose's, forecasts predict's; docs/report.md states each number's theory.
"""

from gspo_dynamics.report._build import build_report
from gspo_dynamics.report._compute import TIME_KEYS, Accounting, Waste, account, stop_step
from gspo_dynamics.report._divergence import K_SE, METRICS, Parting, parting, partings
from gspo_dynamics.report._entropy_floor import EntropyFloor, entropy_floor
from gspo_dynamics.report._model import CURVES, Report, RunReport, Section, Table
from gspo_dynamics.report._render import to_html, to_markdown

__all__ = ["CURVES", "K_SE", "METRICS", "TIME_KEYS", "Accounting", "EntropyFloor", "Parting", "Report", "RunReport",
           "Section", "Table", "Waste", "account", "build_report", "entropy_floor", "parting", "partings", "stop_step",
           "to_html", "to_markdown"]
