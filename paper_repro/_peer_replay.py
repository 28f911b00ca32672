"""Replay saved TRL log rows through the peer's own TRL callback, then its offline report (run by
`peer_diagnose.py` with the peer's Python; it imports post_training_toolkit, never gspo_dynamics).

    <peer venv>/bin/python paper_repro/_peer_replay.py JOBS.json RESULTS.json

JOBS.json: [{"name": str, "rows": [TRL log_history row, ...]}]. For each job, as a GRPOTrainer would:
`DiagnosticsCallback(run_dir=...)` gets `on_train_begin` with a GRPOConfig-named args (the callback
picks its trainer type and metric names from that class name), `on_log(logs=row minus "step")` per
row with `state.global_step = row["step"]` (its live heuristics, its critical-failure check, and the
metrics.jsonl it writes), and `on_train_end`. Then the offline path that `ptt-diagnose --input RUN_DIR`
runs (`models.engine.run_diagnostics`: load_jsonl -> compute_derived_metrics -> run_heuristics ->
report) on that metrics.jsonl; its insights are recomputed by the same three calls to keep them as
data. RESULTS.json: {"files": the peer's files this run loaded (modules, YAML rules, report template),
"results": name -> {"report": [[type, severity], ...] in the peer's order, "live":
[[type, severity, step], ...], "critical": reason or null, "postmortem": exit reason or null,
"status": the report's Status line, "metrics": the metric names the callback logged}}; a job the
peer fails on gets {"error": ...}. Live insights are kept at the first step each (type, severity) is seen.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import tempfile
import warnings
from pathlib import Path

from transformers import TrainerControl, TrainerState

from post_training_toolkit.integrations.trl import DiagnosticsCallback
from post_training_toolkit.models.engine import compute_derived_metrics, load_jsonl, run_diagnostics
from post_training_toolkit.models.heuristics import run_heuristics

GRPOConfig = type("GRPOConfig", (), {})  # the class name is all the callback reads of args here
STATUS = re.compile(r"\*\*Status:\*\* (.+)$", re.M)


def replay(rows: list[dict], run_dir: Path) -> dict:
    cb = DiagnosticsCallback(run_dir=run_dir, enable_snapshots=False, enable_resume_validation=False,
                             straggler_detection=False, distributed_memory=False, auto_diagnostics=False)
    live: list[list] = []
    handle = cb._handle_live_insights

    def record_live(insights, step, control):  # each (type, severity) at its first step only
        seen = {(t, sev) for t, sev, _ in live}
        live.extend([i.type, i.severity, step] for i in insights if (i.type, i.severity) not in seen)
        handle(insights, step, control)

    cb._handle_live_insights = record_live
    args, state, control = GRPOConfig(), TrainerState(), TrainerControl()
    cb.on_train_begin(args, state, control)
    for row in rows:
        state.global_step = int(row.get("step", state.global_step))
        cb.on_log(args, state, control, logs={k: v for k, v in row.items() if k != "step"})
    postmortem = cb._postmortem_recorder.exit_reason if cb._postmortem_recorder else None
    cb.on_train_end(args, state, control)
    metrics = cb.log_path
    df, trainer_type = load_jsonl(metrics)
    report = run_heuristics(compute_derived_metrics(df, trainer_type), trainer_type) if len(df) else []
    status = None
    if len(df):
        text = run_diagnostics(metrics, run_dir / "reports", make_plots=False).read_text()
        status = (STATUS.search(text) or [None, None])[1]
    return {"report": [[i.type, i.severity] for i in report], "live": live,
            "critical": cb._stop_reason if cb._critical_failure_detected else None,
            "postmortem": postmortem, "status": status, "trainer_type": trainer_type,
            "metrics": sorted(c for c in df.columns if c not in ("step", "timestamp"))}


def main(jobs_path: str, out_path: str) -> None:
    warnings.simplefilter("ignore")  # numpy's warnings on the peer's NaN correlations, once per log
    jobs = json.loads(Path(jobs_path).read_text())
    out = {}
    with tempfile.TemporaryDirectory(prefix="ptt_replay_") as tmp:
        for k, job in enumerate(jobs):
            chatter = io.StringIO()  # the callback's live warnings go to stdout; kept out of ours
            try:
                with contextlib.redirect_stdout(chatter):
                    out[job["name"]] = replay(job["rows"], Path(tmp) / f"run{k}")
            except Exception as e:  # the peer failing on a log is a result, not a crash of the comparison
                out[job["name"]] = {"error": f"{type(e).__name__}: {e}"}
    root = Path(sys.modules["post_training_toolkit"].__file__).parent.parent
    package = root / "post_training_toolkit"
    ran = {str(Path(m.__file__).resolve().relative_to(root)) for m in list(sys.modules.values())
           if getattr(m, "__file__", None) and Path(m.__file__).resolve().is_relative_to(package)}
    ran |= {str(p.relative_to(root)) for p in (root / "post_training_toolkit/heuristics/builtin").rglob("*.yaml")}
    ran.add("post_training_toolkit/models/templates/report_template.md")
    Path(out_path).write_text(json.dumps({"results": out, "files": sorted(ran)}))
    print(f"replayed {len(jobs)} logs through the peer's callback")


if __name__ == "__main__":
    main(*sys.argv[1:3])
