"""Claim: on every labelled log family, diagnose's primary verdict is right on at least as many logs as the
peer tool's (microsoft/post-training-toolkit, "PTT") verdict mapped onto our modes (issue 38, item 5).

The logs: the generator families of `diagnose_generalisation.generate` (simulator, contextual, trainer), the
TRL family (`paper_repro/data/trl_family/<run>/trainer_state.json` + label.json, written by TRL's own
GRPOTrainer) where present, and the finding logs of `paper_repro/finding_logs.py` (`finding_logs(out_dir)`:
[(finding or "healthy", path)]) where present.

How the peer runs offline. Its only offline entry (`ptt-diagnose --input RUN_DIR`) reads the metrics.jsonl
that its TRL callback (`DiagnosticsCallback`) writes during training; it cannot read trainer_state.json,
verl JSONL or a W&B CSV. So each log is replayed through that callback as a GRPOTrainer would drive it
(`_peer_replay.py`, run by the peer's own Python): `on_log` per logged row (the callback renames TRL keys
to its own, runs its live heuristics every 10 steps and its NaN/Inf/loss > 100 check on every row), then
the `ptt-diagnose` path on the metrics.jsonl it wrote (its Python heuristics for GRPO + its YAML rules,
sorted by severity). A trainer_state.json is replayed as its log_history rows, untouched; a log in another
format is first read by `read_log` and written back as TRL rows (our names -> TRL GRPOTrainer keys: the
peer's best chance, since it reads no other format). The peer gets no hyperparameters; nor does diagnose.

Mapping of the peer's outputs, fixed before any result was looked at (peer name -> our mode, our finding;
"-" is none). A peer alert with no mode is wrong for any label when it heads the list.

  critical: NaN/Inf detected (callback)      dynamical_instability, non_finite
  critical: loss > 100 (callback)            dynamical_instability, -
  postmortem exit nan / divergence           dynamical_instability, non_finite / -
  mode_collapse_entropy, grpo_entropy_collapse, grpo_entropy_drop, entropy_collapse, yaml_entropy_collapse,
  mode_collapse_length_variance, grpo_diversity_collapse, repetition_rate_high, empty_response_rate_high
                                             policy_concentration, -
  reward_hacking_suspected, grpo_reward_length_correlation, grpo_length_drift, reward_model_imbalance,
  length_collapse                            reward_hacking, -
  grpo_reward_without_quality                reward_hacking, reward_function_divergence
  response_truncation_rate_high              reward_hacking, truncation
  grpo_reward_collapse, yaml_grpo_group_reward_collapse
                                             advantage_degeneracy, -
  instability_hotspot, reward_variance_spike, yaml_reward_variance_spike, grpo_loss_divergence,
  grpo_advantage_explosion, advantage_explosion
                                             dynamical_instability, -
  kl_instability, grpo_kl_divergence, yaml_kl_divergence_high, kl_volatility, ppo_approx_kl_spike
                                             dynamical_instability, kl_spike
  gradient_explosion, gradient_instability   dynamical_instability, grad_norm_spike
  grpo_clip_ratio_high, yaml_clip_fraction_high, clip_fraction_high, grpo_importance_sampling_ratio_anomaly
                                             dynamical_instability, ratio_spike
  gradient_vanishing, dpo_loss_random, dpo_loss_plateau, sft_loss_plateau, win_rate_plateau
                                             stalled, -
  no alert at all                            healthy_saturation (the peer's "Stable")
  any other alert (kl_above_target, policy_drift_*, refusal_*, slice_degradation, value-head, DPO/KTO/ORPO
  rules, ...)                                -, -
The peer has no check for train_inference_mismatch or clip_zero_on_policy, and no mode for still_rising,
noise_dominated or (but for gradient_vanishing) stalled.

Scoring, the same rule for both tools. A mode reading is right when the tool's one verdict equals the label:
ours is `d.primary`; the peer's is the mode of the first item of its list (critical failures first, then
the report's insights in the peer's own order, which sorts them high > medium > low and keeps its heuristic
order within a severity), an item with no mode making it wrong, an empty list reading healthy_saturation.
A second column merges still_rising into healthy_saturation on both sides (a run that is fine either way,
which the peer cannot tell apart). A finding is detected by us when it is among `d.findings`' names, by
the peer when any item it ever gave (the report, its live warnings at any step, its critical failure, the
postmortem) maps to it. Per finding: detections on the logs labelled with it, and false alarms on the
clean logs (finding_logs' "healthy" ones and the families' healthy_saturation / still_rising logs).

Registry peers (issue 50 item 6): rldoctor, rlprobe, rlwatch, trainspotter, zen-rl and polgrad on the same logs, plus
the real logs labelled by eye present here (family "real"), installed, run, mapped (`peer_tools.json`, fixed before
scoring) and scored as `_peer_registry`'s docstring says; a false alarm there is any warning on a clean log.

    python paper_repro/peer_diagnose.py [--quick] [--no-record] [--peer DIR] [--no-install] [--only NAMES]

DIR (default /work/peer) is a checkout of PTT with its own venv at DIR/.venv; without it PTT is skipped. PTT's
commit and the sha256 of each of its files the run loaded go to paper_repro/peer_manifest.json; the registry
peers' versions are pinned in peer_tools.json.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import _peer_registry  # noqa: E402
from _results import Claim, record, replace_section  # noqa: E402

PEER_REPO = "microsoft/post-training-toolkit"
DEFAULT_PEER = Path("/work/peer")
HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "peer_manifest.json"
TRL_FAMILY = HERE / "data" / "trl_family"
SECTION = "## Diagnose vs the peer (microsoft/post-training-toolkit)"
CLAIM = Claim("diagnose-vs-peer", "on each labelled log family, diagnose's primary verdict is right on at least as "
              f"many logs as the peer's ({PEER_REPO}) verdict mapped onto our modes", source="ours")
HEALTHY = "healthy_saturation"  # the verdict of a peer that raised no alert
CLEAN = "healthy"  # finding_logs' label of a log with no finding
CLEAN_MODES = ("healthy_saturation", "still_rising")  # family logs counted as clean for false alarms
MERGED = {"still_rising": "healthy_saturation"}  # the merged column's relabelling (both sides)
UNMAPPED = "unmapped"  # the peer's verdict when its first alert has no mode
FINDINGS = ("train_inference_mismatch", "non_finite", "grad_norm_spike", "kl_spike", "ratio_spike",
            "clip_zero_on_policy", "reward_function_divergence", "truncation")
SEVERITY = {"critical": 0, "high": 1, "medium": 2, "low": 3}

_C, _H, _D, _I, _S = "policy_concentration", "reward_hacking", "advantage_degeneracy", "dynamical_instability", "stalled"
MAPPING: dict[str, tuple[str | None, str | None]] = {  # the docstring's table: peer name -> (mode, finding)
    "critical:non_finite": (_I, "non_finite"), "critical:loss": (_I, None),
    "postmortem:nan": (_I, "non_finite"), "postmortem:divergence": (_I, None),
    **dict.fromkeys(("mode_collapse_entropy", "grpo_entropy_collapse", "grpo_entropy_drop", "entropy_collapse",
                     "yaml_entropy_collapse", "mode_collapse_length_variance", "grpo_diversity_collapse",
                     "repetition_rate_high", "empty_response_rate_high"), (_C, None)),
    **dict.fromkeys(("reward_hacking_suspected", "grpo_reward_length_correlation", "grpo_length_drift",
                     "reward_model_imbalance", "length_collapse"), (_H, None)),
    "grpo_reward_without_quality": (_H, "reward_function_divergence"),
    "response_truncation_rate_high": (_H, "truncation"),
    **dict.fromkeys(("grpo_reward_collapse", "yaml_grpo_group_reward_collapse"), (_D, None)),
    **dict.fromkeys(("instability_hotspot", "reward_variance_spike", "yaml_reward_variance_spike",
                     "grpo_loss_divergence", "grpo_advantage_explosion", "advantage_explosion"), (_I, None)),
    **dict.fromkeys(("kl_instability", "grpo_kl_divergence", "yaml_kl_divergence_high", "kl_volatility",
                     "ppo_approx_kl_spike"), (_I, "kl_spike")),
    **dict.fromkeys(("gradient_explosion", "gradient_instability"), (_I, "grad_norm_spike")),
    **dict.fromkeys(("grpo_clip_ratio_high", "yaml_clip_fraction_high", "clip_fraction_high",
                     "grpo_importance_sampling_ratio_anomaly"), (_I, "ratio_spike")),
    **dict.fromkeys(("gradient_vanishing", "dpo_loss_random", "dpo_loss_plateau", "sft_loss_plateau",
                     "win_rate_plateau"), (_S, None)),
}
PEER_CHECKS = {f for _, f in MAPPING.values() if f}  # findings the peer has any rule for
# TRL GRPOTrainer keys a non-TRL log is written back under (our canonical name -> TRL key via canonical_name)
TRL_KEYS = ("reward", "reward_std", "frac_reward_zero_std", "entropy", "kl", "clip_ratio/region_mean",
            "completions/mean_length", "completions/clipped_ratio", "grad_norm", "learning_rate", "loss")


def critical_name(reason: str | None) -> str | None:
    """The mapping's name of the callback's critical-failure reason (`_check_critical_failure`)."""
    if not reason:
        return None
    return "critical:non_finite" if ("NaN" in reason or "Inf" in reason) else "critical:loss"


def peer_items(result: dict) -> list[tuple[str, str]]:
    """The peer's verdict list on one log, most severe first: its critical failure, its postmortem exit, then
    its report's insights in its own order ((name, severity); the report comes sorted by severity)."""
    items = []
    if (name := critical_name(result.get("critical"))) is not None:
        items.append((name, "critical"))
    if result.get("postmortem") in ("nan", "divergence"):
        items.append((f"postmortem:{result['postmortem']}", "critical"))
    items += [(t, s) for t, s in result.get("report", [])]
    return sorted(items, key=lambda item: SEVERITY.get(item[1], len(SEVERITY)))  # stable: the peer's order kept


def peer_primary(items: list[tuple[str, str]]) -> str:
    """The peer's one verdict: the mode of its most severe item (UNMAPPED without one), HEALTHY if it said nothing."""
    if not items:
        return HEALTHY
    return MAPPING.get(items[0][0], (None, None))[0] or UNMAPPED


def peer_findings(result: dict) -> set[str]:
    """Findings any of the peer's outputs on a log maps to (report, live warnings, critical, postmortem)."""
    names = [name for name, _ in peer_items(result)] + [t for t, _, _ in result.get("live", [])]
    return {f for name in names if (f := MAPPING.get(name, (None, None))[1])}


def is_right(label: str, verdict: str, merged: bool = False) -> bool:
    """A verdict equals its label (with `merged`, still_rising and healthy_saturation are one)."""
    if merged:
        label, verdict = MERGED.get(label, label), MERGED.get(verdict, verdict)
    return label == verdict


def mode_scores(rows: list[dict]) -> dict[str, int]:
    """Counts over rows {label, ours, peer}: n, each tool right (exact and merged), the peer's unmapped heads."""
    return {"n": len(rows),
            "ours": sum(is_right(r["label"], r["ours"]) for r in rows),
            "peer": sum(is_right(r["label"], r["peer"]) for r in rows),
            "ours_merged": sum(is_right(r["label"], r["ours"], True) for r in rows),
            "peer_merged": sum(is_right(r["label"], r["peer"], True) for r in rows),
            "peer_unmapped": sum(r["peer"] == UNMAPPED for r in rows),
            "peer_silent": sum(r["peer_items"] == 0 for r in rows)}


def finding_scores(rows: list[dict], finding: str) -> dict[str, int]:
    """Rows {label, ours_findings, peer_findings}: detections on `finding`'s logs, false alarms on clean logs."""
    hit = [r for r in rows if r["label"] == finding]
    clean = [r for r in rows if r["label"] == CLEAN or r["label"] in CLEAN_MODES]
    return {"n": len(hit), "clean": len(clean),
            "ours": sum(finding in r["ours_findings"] for r in hit),
            "peer": sum(finding in r["peer_findings"] for r in hit),
            "ours_false": sum(finding in r["ours_findings"] for r in clean),
            "peer_false": sum(finding in r["peer_findings"] for r in clean)}



def trl_rows(path: str) -> list[dict]:
    """The log as TRL log_history rows: a trainer_state.json's own rows, untouched; any other format read by
    `read_log` and written back under TRL GRPOTrainer keys (NaN cells left out, as a missing key)."""
    import math

    from gspo_dynamics.logs import canonical_name, read_log

    if Path(path).name == "trainer_state.json":
        return json.loads(Path(path).read_text())["log_history"]
    log = read_log(path)
    to_trl = {canonical_name(k): k for k in TRL_KEYS}

    def key(name: str) -> str:
        if name.startswith("eval/"):
            return "eval_" + to_trl.get(name[5:], name[5:])
        if name.startswith("reward/"):
            return f"rewards/{name[7:]}/mean"
        return to_trl.get(name, name)

    rows = []
    for i, step in enumerate(log.steps):
        row = {key(n): float(v[i]) for n, v in log.series.items() if not math.isnan(v[i])}
        rows.append({**row, "step": int(step)})
    return rows


def labelled_logs(tmp: str, quick: bool) -> dict[str, list[tuple[str, str]]]:
    """family -> [(label, path)]: the generator families, the TRL family, the finding logs and the real logs
    labelled by eye (those on this machine, with a mode label) where present."""
    from diagnose_generalisation import generate

    families = generate(tmp, quick)  # it may already read the TRL family; else it is read here
    families["trl"] = families.get("trl") or [
        (json.loads(p.read_text())["mode"], str(p.parent / "trainer_state.json"))
        for p in sorted(TRL_FAMILY.glob("*/label.json")) if (p.parent / "trainer_state.json").exists()]
    if not families["trl"]:
        print(f"no TRL family at {TRL_FAMILY}: skipped")
        del families["trl"]
    try:
        from finding_logs import finding_logs
    except ImportError:
        print("no paper_repro/finding_logs.py: the findings are skipped")
    else:
        try:
            families["findings"] = [(label, str(path)) for label, path in finding_logs(f"{tmp}/findings")]
        except Exception as e:  # a helper still being written: the modes are compared all the same
            print(f"paper_repro/finding_logs.py failed ({type(e).__name__}: {e}): the findings are skipped")
    from _real_log_labels import load_labels, locate

    real = [(e["label"], str(path)) for e in load_labels() if e["label"] not in ("refused", "too_short")
            and (path := locate(e)[0]) is not None]
    if real:
        families["real"] = real
    return families


@functools.lru_cache(maxsize=None)
def diagnose_log(path: str) -> dict:
    """diagnose on one log: {"verdict": primary, "findings": names, "warned": names above a note} (an error reads
    as "error", wrong for any label)."""
    from gspo_dynamics.diagnose import FINDING_NOTE, diagnose
    from gspo_dynamics.logs import read_log

    try:
        d = diagnose(read_log(path))
    except Exception as e:  # a crash on a labelled log is a wrong answer, not the end of the comparison
        print(f"  diagnose failed on {path}: {type(e).__name__}: {e}")
        return {"verdict": "error", "findings": set(), "warned": set()}
    return {"verdict": d.primary, "findings": {f.name for f in d.findings},
            "warned": {f.name for f in d.findings if f.severity != FINDING_NOTE}}


def run_ours(path: str) -> tuple[str, set[str]]:
    """diagnose's primary verdict and finding names on one log (`diagnose_log`)."""
    d = diagnose_log(path)
    return d["verdict"], d["findings"]


def run_peer(peer: Path, families: dict, tmp: str) -> tuple[dict, list[str]]:
    """The peer's results on every log ((family, index) -> result) and the peer files the replay loaded."""
    jobs = [{"name": f"{family}/{i}", "rows": trl_rows(path)}
            for family, items in families.items() for i, (_, path) in enumerate(items)]
    jobs_path, out_path = Path(tmp) / "peer_jobs.json", Path(tmp) / "peer_results.json"
    jobs_path.write_text(json.dumps(jobs))
    env = {**os.environ, "PYTHONPATH": str(peer)}
    proc = subprocess.run([str(peer / ".venv/bin/python"), str(HERE / "_peer_replay.py"), str(jobs_path),
                           str(out_path)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the peer's replay failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")
    out = json.loads(out_path.read_text())
    return out["results"], out["files"]


def score_rows(families: dict, peer_results: dict) -> dict[str, list[dict]]:
    """family -> one row per log: label, both tools' verdicts and findings."""
    table = {}
    for family, items in families.items():
        rows = []
        for i, (label, path) in enumerate(items):
            result = peer_results[f"{family}/{i}"]
            ours, ours_findings = run_ours(path)
            items_ = peer_items(result) if "error" not in result else [("error", "critical")]
            rows.append({"label": label, "ours": ours, "ours_findings": ours_findings,
                         "peer": peer_primary(items_), "peer_items": len(items_), "peer_head": items_[0][0] if items_
                         else "-", "peer_findings": peer_findings(result) if "error" not in result else set(),
                         "peer_metrics": result.get("metrics", []), "path": path})
        table[family] = rows
    return table


def family_lines(table: dict[str, list[dict]]) -> list[str]:
    """Markdown: per family, both tools' right counts (exact, then still_rising merged into healthy)."""
    lines = ["| family | logs | ours right | peer right | ours right, healthy merged | peer right, healthy merged "
             "| peer: head alert with no mode | peer: no alert |", "|---|---|---|---|---|---|---|---|"]
    for family, rows in table.items():
        s = mode_scores(rows)
        lines.append(f"| {family} | {s['n']} | {s['ours']} | {s['peer']} | {s['ours_merged']} | {s['peer_merged']} "
                     f"| {s['peer_unmapped']} | {s['peer_silent']} |")
    return lines


def label_lines(table: dict[str, list[dict]]) -> list[str]:
    """Markdown: per label over all mode families, both tools' right counts and the peer's commonest head alert."""
    rows = [r for family_rows in table.values() for r in family_rows]
    lines = ["| label | logs | ours right | peer right | peer's commonest head alert (logs) |", "|---|---|---|---|---|"]
    for label in dict.fromkeys(r["label"] for r in rows):
        mine = [r for r in rows if r["label"] == label]
        head, count = Counter(r["peer_head"] for r in mine).most_common(1)[0]
        lines.append(f"| {label} | {len(mine)} | {sum(is_right(label, r['ours']) for r in mine)} "
                     f"| {sum(is_right(label, r['peer']) for r in mine)} | {head} ({count}) |")
    return lines


def finding_lines(rows: list[dict]) -> list[str]:
    """Markdown: per finding, detections on its logs and false alarms on the clean logs, both tools."""
    lines = ["| finding | logs | ours detected | peer detected | peer has a rule | clean logs | ours false alarms "
             "| peer false alarms |", "|---|---|---|---|---|---|---|---|"]
    for finding in FINDINGS:
        s = finding_scores(rows, finding)
        ours, peer = (s["ours"], s["peer"]) if s["n"] else ("-", "-")
        lines.append(f"| {finding} | {s['n']} | {ours} | {peer} | {'yes' if finding in PEER_CHECKS else 'no'} "
                     f"| {s['clean']} | {s['ours_false']} | {s['peer_false']} |")
    return lines


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(peer: Path, files: list[str], command: str) -> dict:
    """The peer's repo, commit, the versions of its Python packages, and the sha256 of each file the run loaded."""
    commit = subprocess.run(["git", "-C", str(peer), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    versions = subprocess.run([str(peer / ".venv/bin/python"), "-c", "import importlib.metadata as m, json; print(json.dumps("
                               "{p: m.version(p) for p in ('numpy', 'pandas', 'scipy', 'PyYAML', 'Jinja2', 'transformers')}))"],
                              capture_output=True, text=True).stdout.strip()
    manifest = {"repo": PEER_REPO, "commit": commit or "unknown", "command": command,
                "python": subprocess.run([str(peer / ".venv/bin/python"), "--version"], capture_output=True,
                                         text=True).stdout.strip(),
                "packages": json.loads(versions or "{}"),
                "files": {f: sha256(peer / f) for f in files}}
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {MANIFEST} ({len(files)} peer files, commit {manifest['commit']})")
    return manifest


def section(table: dict, findings: list[dict], coverage: dict, manifest: dict, command: str) -> str:
    """The RESULTS.md section: how the peer was run, the per-family, per-label and per-finding tables."""
    body = [SECTION, "", f"`{command}`: the peer at commit `{manifest['commit']}` (files and sha256 in "
            "`paper_repro/peer_manifest.json`), each log replayed through its TRL callback and then its "
            "`ptt-diagnose` report; mapping and scoring as fixed in `paper_repro/peer_diagnose.py`'s docstring. "
            "Neither tool gets hyperparameters.", "", "### Modes, per family", "", *family_lines(table), "",
            "### Modes, per label (all families)", "", *label_lines(table), "",
            "### Findings (detections on each finding's logs; false alarms on the clean logs)", "",
            *finding_lines(findings), "", "Metrics the peer's callback kept from each family's logs (its GRPO key "
            "map; every other key of the log is dropped before its heuristics see it):", ""]
    body += [f"- {family}: {', '.join(names) or 'none'}" for family, names in coverage.items()]
    return "\n".join(body) + "\n"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced CI-sized families")
    parser.add_argument("--no-record", action="store_true", help="leave RESULTS.md alone (the manifest is still written)")
    parser.add_argument("--dump", type=Path, help="also write every log's row (label, verdicts, findings) here")
    parser.add_argument("--peer", type=Path, default=DEFAULT_PEER, help=f"PTT's checkout (default {DEFAULT_PEER})")
    parser.add_argument("--no-install", action="store_true", help="use only registry peers already in the cache")
    parser.add_argument("--only", help="comma-separated registry peers to run (default: all in peer_tools.json)")
    return parser.parse_args()


def compare_ptt(args, families: dict, tmp: str, started: float, command: str) -> None:
    """PTT against diagnose, as issue 38 set it up (skipped without its checkout)."""
    if not (args.peer / "post_training_toolkit").is_dir() or not (args.peer / ".venv/bin/python").exists():
        print(f"[SKIP] {CLAIM.id}: no peer checkout with its venv at {args.peer} (a checkout of {PEER_REPO} "
              "with post_training_toolkit/ and .venv/bin/python); PTT not compared")
        return
    peer_results, files = run_peer(args.peer, families, tmp)
    table = score_rows(families, peer_results)
    coverage = {family: sorted({m for r in rows for m in r["peer_metrics"]}) for family, rows in table.items()}
    findings = table.pop("findings", []) + [r for rows in table.values() for r in rows if r["label"] in CLEAN_MODES]
    for line in family_lines(table) + [""] + label_lines(table) + [""] + finding_lines(findings):
        print(line)
    behind = [f for f, rows in table.items() if mode_scores(rows)["ours"] < mode_scores(rows)["peer"]]
    measured = "; ".join(f"{f} {s['ours']} vs {s['peer']} of {s['n']}" for f, s in
                         ((f, mode_scores(rows)) for f, rows in table.items()))
    record(CLAIM, predicted="ours >= peer on every family", measured=f"ours vs peer right: {measured}",
           passed=not behind, quick=args.quick, started=started, command=command, write=not args.no_record)
    manifest = write_manifest(args.peer, files, command)
    if not args.no_record:
        replace_section(SECTION, section(table, findings, coverage, manifest, command))


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    command = "python paper_repro/peer_diagnose.py" + (" --quick" if args.quick else "")
    ptt = (args.peer / "post_training_toolkit").is_dir() and (args.peer / ".venv/bin/python").exists()
    if not ptt and not _peer_registry.available(args)[0]:
        print(f"[SKIP] {CLAIM.id}: no peer checkout with its venv at {args.peer} and no registry peer installed; "
              "nothing compared")
        return
    with tempfile.TemporaryDirectory(prefix="gspo_peer_") as tmp:
        families = labelled_logs(tmp, args.quick)
        print(", ".join(f"{f} {len(logs)}" for f, logs in families.items()) + " labelled logs")
        _peer_registry.compare(args, families, tmp, started, command, trl_rows, diagnose_log, FINDINGS)
        compare_ptt(args, families, tmp, started, command)


if __name__ == "__main__":
    main()
