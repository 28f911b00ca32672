"""The registry peers of `peer_diagnose.py`: each installed from the package registry into its own venv under a
cache folder outside the repository, run on the same labelled logs through its own documented input
(`_peer_tools.py`, by the peer's Python), its outputs mapped onto our modes and findings by the committed
`peer_tools.json` (written before any peer was scored), and scored by the rule `peer_diagnose.py` applies to PTT.

The cache: $GSPO_DYNAMICS_PEER_CACHE, else ~/.cache/gspo-dynamics/peers; one venv per peer at <cache>/<name>,
made with the running interpreter's `venv` and `pip install <name>==<version>`. A peer that cannot be installed
(no network, no such version) is skipped with the reason.

Scores, the same rule for every tool: a mode family's log is right when the tool's one verdict equals its label
(ours `d.primary`; a peer's, its most severe output's mode, healthy_saturation when it said nothing); a finding is
detected when it is among our findings / when any of the peer's outputs maps to it; a clean log (labelled
healthy_saturation, still_rising, or finding_logs' "healthy") is a false alarm for us when diagnose reports a
finding above a note or a verdict other than healthy or rising, for a peer when it keeps any output at all.
Targets (issue 50): ours >= each peer on every family and every finding; our false alarms <= the best peer's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from _results import Claim, record, replace_section

HERE = Path(__file__).resolve().parent
TOOLS = HERE / "peer_tools.json"
ENV_VAR = "GSPO_DYNAMICS_PEER_CACHE"
CLAIM = Claim("diagnose-vs-peers", "on every labelled log family and finding, diagnose is right at least as "
                       "often as each registry peer (rldoctor, rlprobe, rlwatch, trainspotter, zen-rl, polgrad), with "
                       "no more false alarms on clean logs than the best of them", source="ours")
SECTION = "## Diagnose vs the registry peers (issue 50)"
HEALTHY = "healthy_saturation"  # a peer that said nothing
UNMAPPED = "unmapped"  # a peer whose first output names none of our modes


def config() -> dict:
    return json.loads(TOOLS.read_text())


def cache_dir() -> Path:
    return Path(os.environ.get(ENV_VAR) or Path.home() / ".cache" / "gspo-dynamics" / "peers")


def ensure(name: str, version: str, install: bool = True) -> tuple[Path | None, str]:
    """(the peer's Python, "") once `name==version` is importable in its venv, else (None, why)."""
    venv = cache_dir() / name
    python = venv / "bin" / "python"
    stamp = venv / f".installed-{version}"
    if stamp.exists():
        return python, ""
    if not install:
        return None, f"not installed at {venv} (run without --no-install)"
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{name}=={version}"]]
    for cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return None, f"`{' '.join(cmd[-2:])}` failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
    stamp.touch()
    return python, ""


def run(name: str, python: Path, jobs_path: Path, tmp: str) -> dict:
    """The peer's raw outputs per job name ({"items": [[output, severity], ...]} or {"error": ...})."""
    out = Path(tmp) / f"peer_{name}.json"
    proc = subprocess.run([str(python), str(HERE / "_peer_tools.py"), name, str(jobs_path), str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}'s run failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
    return json.loads(out.read_text())


def items(result: dict, cfg: dict) -> list[tuple[str, str]]:
    """The peer's outputs on one log, most severe first (stable: its own order within a severity), without the
    'check passed / skipped' ones."""
    rank = cfg["severity_rank"]
    kept = [(n, s) for n, s in result.get("items", []) if s not in cfg["not_findings"]]
    return sorted(kept, key=lambda item: rank.get(item[1], len(rank)))


def primary(found: list[tuple[str, str]], mapping: dict) -> str:
    if not found:
        return HEALTHY
    return (mapping.get(found[0][0]) or [None, None])[0] or UNMAPPED


def findings(found: list[tuple[str, str]], mapping: dict) -> set[str]:
    return {f for n, _ in found if (f := (mapping.get(n) or [None, None])[1])}


def score(name: str, results: dict, families: dict, cfg: dict) -> dict[str, list[dict]]:
    """family -> per log {label, verdict, findings, head, error} for one peer."""
    mapping = cfg["peers"][name]["map"]
    table = {}
    for family, logs in families.items():
        rows = []
        for i, (label, _) in enumerate(logs):
            result = results.get(f"{family}/{i}", {"error": "no result"})
            found = items(result, cfg) if "error" not in result else []
            rows.append({"label": label, "verdict": primary(found, mapping) if "error" not in result else "error",
                         "findings": findings(found, mapping), "head": found[0][0] if found else "-",
                         "error": result.get("error")})
        table[family] = rows
    return table


def commonest_head(rows: list[dict]) -> str:
    head, count = Counter(r["head"] for r in rows).most_common(1)[0]
    return f"{head} ({count})"


CLEAN_MODES = ("healthy_saturation", "still_rising")


def is_clean(label: str) -> bool:
    return label == "healthy" or label in CLEAN_MODES


def mode_families(families: dict) -> list[str]:
    """The families labelled with modes (finding_logs' family is labelled with findings)."""
    return [f for f in families if f != "findings"]


def family_counts(families: dict, ours: dict, peers: dict) -> dict[str, dict[str, int]]:
    """family -> {"n", "ours", <peer>: right count} (a verdict right when it equals the label)."""
    out = {}
    for family in mode_families(families):
        labels = [label for label, _ in families[family]]
        counts = {"n": len(labels), "ours": sum(ours[family][i]["verdict"] == lab for i, lab in enumerate(labels))}
        for name, table in peers.items():
            counts[name] = sum(r["verdict"] == r["label"] for r in table[family])
        out[family] = counts
    return out


def finding_counts(families: dict, ours: dict, peers: dict, names: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """finding -> {"n", "ours", <peer>: detections} over every log labelled with it (any family)."""
    out = {}
    for finding in names:
        where = [(f, i) for f, logs in families.items() for i, (lab, _) in enumerate(logs) if lab == finding]
        if not where:
            continue
        counts = {"n": len(where), "ours": sum(finding in ours[f][i]["findings"] for f, i in where)}
        for name, table in peers.items():
            counts[name] = sum(finding in table[f][i]["findings"] for f, i in where)
        out[finding] = counts
    return out


def false_alarms(families: dict, ours: dict, peers: dict) -> dict[str, int]:
    """On every clean log: how many each tool warned on (ours: a finding above a note or a verdict that is not
    healthy or rising; a peer: any output it kept, or an error). "n" is the number of clean logs."""
    where = [(f, i) for f, logs in families.items() for i, (lab, _) in enumerate(logs) if is_clean(lab)]
    out = {"n": len(where), "ours": sum(bool(ours[f][i]["warned"]) or ours[f][i]["verdict"] not in CLEAN_MODES
                                          for f, i in where)}
    for name, table in peers.items():
        out[name] = sum(table[f][i]["head"] != "-" or bool(table[f][i]["error"]) for f, i in where)
    return out


def targets(fam: dict, fnd: dict, alarms: dict, peers: list[str]) -> list[str]:
    """The issue's targets missed, each with its numbers (empty: all met)."""
    missed = [f"{family}: ours {c['ours']} < {p} {c[p]} of {c['n']}" for family, c in fam.items() for p in peers
              if c["ours"] < c[p]]
    missed += [f"{finding}: ours {c['ours']} < {p} {c[p]} of {c['n']}" for finding, c in fnd.items() for p in peers
               if c["ours"] < c[p]]
    best = min((alarms[p] for p in peers), default=None)
    if best is not None and alarms["ours"] > best:
        missed.append(f"false alarms on clean logs: ours {alarms['ours']} > the best peer's {best} of {alarms['n']}")
    return missed


def lines(fam: dict, fnd: dict, alarms: dict, peers: list[str], tables: dict) -> list[str]:
    """Markdown tables: right per family, detections per finding, clean logs warned on; each peer's commonest head."""
    head = "| | logs | ours | " + " | ".join(peers) + " |"
    rule = "|---" * (3 + len(peers)) + "|"
    out = ["Primary verdict right, per family:", "", head.replace("| |", "| family |"), rule]
    out += [f"| {f} | {c['n']} | {c['ours']} | " + " | ".join(str(c[p]) for p in peers) + " |" for f, c in fam.items()]
    total = {k: sum(c[k] for c in fam.values()) for k in ["n", "ours", *peers]}
    out.append(f"| all | {total['n']} | {total['ours']} | " + " | ".join(str(total[p]) for p in peers) + " |")
    out += ["", "Findings detected on the logs that show them:", "", head.replace("| |", "| finding |"), rule]
    out += [f"| {f} | {c['n']} | {c['ours']} | " + " | ".join(str(c[p]) for p in peers) + " |" for f, c in fnd.items()]
    out += ["", "Clean logs warned on (false alarms; fewer is better):", "", head.replace("| |", "| |"), rule,
            f"| clean | {alarms['n']} | {alarms['ours']} | " + " | ".join(str(alarms[p]) for p in peers) + " |"]
    out += ["", "Each peer's commonest first output over all logs: " + "; ".join(
        f"{p} {commonest_head([r for rows in tables[p].values() for r in rows])}" for p in peers)]
    return out


def available(args) -> tuple[dict[str, Path], dict[str, str]]:
    """The registry peers to run ({name: its Python}, installed unless --no-install) and those skipped ({name: why})."""
    cfg = config()
    wanted = args.only.split(",") if args.only else list(cfg["peers"])
    pythons, skipped = {}, {}
    for name in wanted:
        if name not in cfg["peers"]:
            skipped[name] = f"not in {TOOLS.name}; its peers are {', '.join(cfg['peers'])}"
            continue
        python, why = ensure(name, cfg["peers"][name]["version"], install=not args.no_install)
        if python is None:
            skipped[name] = why
        else:
            pythons[name] = python
    for name, why in skipped.items():
        print(f"[skip] {name}: {why}")
    return pythons, skipped


def compare(args, families: dict, tmp: str, started: float, command: str, rows_of, diagnose_log, finding_names) -> None:
    """The registry peers against diagnose on every family: tables, targets, the claim and the RESULTS.md section
    (`rows_of(path)`: the log as TRL rows; `diagnose_log(path)`: our reading; `finding_names`: the findings scored)."""
    cfg = config()
    pythons, skipped = available(args)
    if not pythons:
        return
    jobs_path = Path(tmp) / "registry_jobs.json"
    jobs_path.write_text(json.dumps([{"name": f"{family}/{i}", "rows": rows_of(path)}
                                     for family, logs in families.items() for i, (_, path) in enumerate(logs)]))
    ours = {family: [diagnose_log(path) for _, path in logs] for family, logs in families.items()}
    tables = {}
    for name, python in pythons.items():
        t0 = time.perf_counter()
        try:
            tables[name] = score(name, run(name, python, jobs_path, tmp), families, cfg)
        except RuntimeError as e:
            skipped[name] = str(e)
            print(f"[skip] {name}: {e}")
            continue
        errors = sum(bool(r["error"]) for rows in tables[name].values() for r in rows)
        print(f"{name}: {time.perf_counter() - t0:.0f} s, {errors} logs it failed on")
    peers = list(tables)
    fam = family_counts(families, ours, tables)
    fnd = finding_counts(families, ours, tables, finding_names)
    alarms = false_alarms(families, ours, tables)
    body = lines(fam, fnd, alarms, peers, tables)
    print("\n".join(body))
    missed = targets(fam, fnd, alarms, peers)
    measured = (f"{len(peers)} peers ({', '.join(peers)}); right: ours {sum(c['ours'] for c in fam.values())} of "
                f"{sum(c['n'] for c in fam.values())}, best peer {max((sum(c[p] for c in fam.values()) for p in peers), default=0)}"
                f"; false alarms on {alarms['n']} clean logs: ours {alarms['ours']}, best peer "
                f"{min((alarms[p] for p in peers), default='-')}; " + ("behind: " + "; ".join(missed) if missed else
                                                                   "ahead or level on every family and finding"))
    record(CLAIM, predicted="ours >= every peer on every family and finding; false alarms <= the best peer's",
           measured=measured, passed=bool(peers) and not missed, quick=args.quick, started=started, command=command,
           write=not args.no_record)
    if args.dump:
        args.dump.write_text(json.dumps({"ours": ours, "peers": tables}, indent=1, default=sorted))
    if args.no_record:
        return
    text = [SECTION, "", f"`{command}`: each peer at the version pinned in `paper_repro/peer_tools.json`, "
            "installed into its own venv outside the repository, given each log through its own documented input "
            "(`paper_repro/_peer_tools.py`); outputs mapped by `peer_tools.json` (written before scoring). Neither tool "
            "gets hyperparameters.", "", *body, ""]
    text += [f"Skipped: {name} ({why})" for name, why in skipped.items()]
    text += ["", "Targets missed: " + ("; ".join(missed) if missed else "none"), "", "Clean logs we warned on: " + (
        "; ".join(f"{family} #{i} ({label}, {Path(path).name}): {ours[family][i]['verdict']}"
                  + (f", {', '.join(sorted(ours[family][i]['warned']))}" if ours[family][i]["warned"] else "")
                  for family, logs in families.items() for i, (label, path) in enumerate(logs)
                  if is_clean(label) and (ours[family][i]["warned"] or ours[family][i]["verdict"] not in CLEAN_MODES))
        or "none")]
    replace_section(SECTION, "\n".join(text) + "\n")
