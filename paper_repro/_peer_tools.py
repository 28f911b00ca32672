"""Run one registry peer on saved TRL log rows through its own documented input (run by `peer_diagnose.py` with
the peer's own Python, from its venv; it never imports gspo_dynamics).

    <peer venv>/bin/python paper_repro/_peer_tools.py PEER JOBS.json RESULTS.json

JOBS.json: [{"name": str, "rows": [TRL log_history row, ...]}]. Per peer, what it is given (its README's entry):
  rldoctor      `rl-doctor diagnose trainer_state.json -f json` (it reads HF/TRL trainer_state.json)
  trainspotter  `trainspotter analyze trainer_state.json --output json` (its "hf" reader)
  rlprobe       its manual-logging API `Recorder(run_dir, algorithm="grpo").log_step(step, **StepRecord fields)`
                with TRL's keys renamed as its TRL integration renames them, then `rlprobe.doctor.diagnose(RUN_DIR)`
                (what `rlprobe doctor RUN_DIR` runs)
  rlwatch       its API `RLWatch(config).log_step(step, **metrics)` with TRL's keys renamed as its TRL callback's
                metric map renames them (alerts are its detectors' per-step output), then its stored alerts
  zen           `zen RUN_DIR` (its console script's main, in this process) on a TensorBoard directory: it reads Stable-Baselines3 tags only, so the rows are
                written under them (reward -> rollout/ep_rew_mean, -entropy -> train/entropy_loss, kl ->
                train/approx_kl, loss -> train/policy_gradient_loss): the peer's best chance
  polgrad       `polgrad.diagnostics.entropy.entropy_trend(entropy_per_step, window=S, generator=seed 0)` on the
                logged entropy (it reads no log; this is its only per-step diagnostic)
RESULTS.json: name -> {"items": [[output name, severity], ...] in the peer's order} or {"error": text}.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = Path(sys.executable).parent
RLPROBE_KEYS = {"reward": "reward_mean", "reward_std": "reward_std", "frac_reward_zero_std": "zero_variance_group_frac",
                "kl": "kl_mean", "entropy": "entropy_mean", "clip_ratio": "clip_fraction",
                "clip_ratio/region_mean": "clip_fraction", "loss": "loss", "learning_rate": "lr",
                "grad_norm": "grad_norm", "completions/mean_length": "completion_len_mean",
                "completions/max_length": "completion_len_max", "completions/clipped_ratio": "truncation_rate"}
RLWATCH_KEYS = {"entropy": ("entropy",), "kl_divergence": ("kl",), "reward_mean": ("reward",),
                "reward_std": ("reward_std",), "loss": ("loss",), "learning_rate": ("learning_rate",),
                "grad_norm": ("grad_norm",)}
ZEN_TAGS = {"reward": "rollout/ep_rew_mean", "kl": "train/approx_kl", "loss": "train/policy_gradient_loss"}


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _state(rows: list[dict], tmp: Path) -> Path:
    path = tmp / "trainer_state.json"
    path.write_text(json.dumps({"log_history": rows, "global_step": int(rows[-1].get("step", len(rows)))}))
    return path


def _cli_json(cmd: list[str], cwd: Path) -> dict:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300)
    start = proc.stdout.find("{")
    if start < 0:
        raise RuntimeError(f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return json.loads(proc.stdout[start:])


def rldoctor(rows, tmp):
    out = _cli_json([str(BIN / "rl-doctor"), "diagnose", str(_state(rows, tmp)), "-f", "json"], tmp)
    return [[f["detector"], f["severity"].lower()] for f in out.get("findings", [])]


def trainspotter(rows, tmp):
    out = _cli_json([str(BIN / "trainspotter"), "analyze", str(_state(rows, tmp)), "--output", "json"], tmp)
    return [[f["detector"], f["severity"].lower()] for f in out.get("findings", [])]


def rlprobe(rows, tmp):
    from rlprobe.recorder import Recorder

    run = tmp / "run"
    rec = Recorder(run, algorithm="grpo")
    for row in rows:
        fields, parts = {}, {}
        for k, v in row.items():
            if (x := _number(v)) is None:
                continue
            if k in RLPROBE_KEYS:
                fields[RLPROBE_KEYS[k]] = x
            elif k.startswith("rewards/") and k.endswith("/mean"):
                parts[k[8:-5]] = x
        if parts:
            fields["reward_components"] = parts
        rec.log_step(int(row.get("step", 0)), **fields)
    rec.close()
    from rlprobe.doctor import diagnose  # what `rlprobe doctor RUN_DIR` runs, in this process (no CLI start per log)

    return [[f.signature_id, str(getattr(f.severity, "value", f.severity))] for f in diagnose(run)]


def rlwatch(rows, tmp):
    from rlwatch.config import RLWatchConfig
    from rlwatch.core import RLWatch

    cfg = RLWatchConfig()
    cfg.storage.log_dir = str(tmp / "rlwatch")
    cfg.run_id = "replay"
    monitor = RLWatch(cfg)
    monitor.start()
    sent = []
    send = monitor._alerts.send

    def keep(alert):  # what its alert manager delivers (after its cooldown), in order
        ok = send(alert)
        if ok:
            sent.append([alert.detector, str(alert.severity).lower()])
        return ok

    monitor._alerts.send = keep
    for row in rows:
        metrics = {name: x for name, keys in RLWATCH_KEYS.items() for k in keys[:1] if (x := _number(row.get(k)))
                   is not None}
        if metrics:
            monitor.log_step(int(row.get("step", 0)), **metrics)
    monitor.stop()
    return sent


def zen(rows, tmp):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    run = tmp / "tb"
    writer = EventFileWriter(str(run))
    for row in rows:
        step = int(row.get("step", 0))
        values = [(tag, _number(row.get(k))) for k, tag in ZEN_TAGS.items()]
        if (h := _number(row.get("entropy"))) is not None:
            values.append(("train/entropy_loss", -h))
        values = [summary_pb2.Summary.Value(tag=t, simple_value=v) for t, v in values if v is not None]
        if values:
            writer.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=values)))
    writer.close()
    from zen import cli  # its console script, run in this process (no CLI start per log)

    argv, cwd, out = sys.argv, os.getcwd(), io.StringIO()
    try:
        sys.argv = ["zen", str(run)]
        os.chdir(tmp)  # it records every run into ./zen_memory.db
        with contextlib.redirect_stdout(out):
            cli.main()
    except SystemExit as e:
        raise RuntimeError(out.getvalue().strip()[-300:]) from e
    finally:
        sys.argv = argv
        os.chdir(cwd)
    return [[m, "issue"] for m in (line.strip() for line in out.getvalue().splitlines()) if m.isupper() and " " not in m]


def polgrad(rows, tmp):
    import torch

    from polgrad.diagnostics.entropy import entropy_trend

    h = [x for row in rows if (x := _number(row.get("entropy"))) is not None]
    if len(h) < 3:
        return []
    report = entropy_trend(torch.tensor(h, dtype=torch.float64), window=len(h),
                           generator=torch.Generator().manual_seed(0))
    if report.changepoint_index is None:
        return []
    return [["entropy_changepoint_falling" if report.slope < 0 else "entropy_changepoint_rising", "issue"]]


PEERS = {"rldoctor": rldoctor, "trainspotter": trainspotter, "rlprobe": rlprobe, "rlwatch": rlwatch, "zen-rl": zen,
         "polgrad": polgrad}


def main(peer: str, jobs_path: str, out_path: str) -> None:
    run = PEERS[peer]
    out = {}
    with tempfile.TemporaryDirectory(prefix=f"{peer}_") as tmp:
        for k, job in enumerate(json.loads(Path(jobs_path).read_text())):
            folder = Path(tmp) / f"job{k}"
            folder.mkdir()
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    out[job["name"]] = {"items": run(job["rows"], folder)}
            except Exception as e:  # the peer failing on a log is a result, not a crash of the comparison
                out[job["name"]] = {"error": f"{type(e).__name__}: {e}"[:300]}
    Path(out_path).write_text(json.dumps(out))


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    main(*sys.argv[1:4])
