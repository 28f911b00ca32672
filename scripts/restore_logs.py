"""Restore the third-party validation logs from their manifests, out of fetched repository snapshots.

The logs other people wrote are never in this repository: each manifest names (repo, commit, path, sha256, file).
With the snapshots fetched to /work/.mirror/<owner>+<name> (the session's `fetch` tool), this writes each file with
`git show COMMIT:PATH`, checks its sha256, and puts it where the scripts look for it:

    paper_repro/wild_logs/labels_*.json, heldout*/labels_*.json  ->  ../wild_logs        ($GSPO_DYNAMICS_WILD_LOGS)
    paper_repro/data/public_collapse/manifest.json              -> ../public_collapse/logs ($GSPO_DYNAMICS_PUBLIC_LOGS)
    paper_repro/data/fresh_runs/manifest.json                    ->  ../fresh_runs       ($GSPO_DYNAMICS_FRESH_RUNS)
    paper_repro/real_log_labels.json ("external")                ->  ../external_logs    ($GSPO_DYNAMICS_EXTERNAL_LOGS)
    paper_repro/real_run_manifest.json                           ->  ../real_run_logs    (real_run_forecast.py --extra)

A file already present with its sha256 is left alone; one whose commit the snapshot lacks, or whose bytes differ, is
skipped and counted. `--repos` prints only the repositories still to fetch (one owner/name a line).

    python scripts/restore_logs.py --repos        # what to fetch
    python scripts/restore_logs.py                # write what the snapshots hold
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path("/work/.mirror")
PAPER = ROOT / "paper_repro"
FIELDS = ("file", "repo", "commit", "path", "sha256")


def _entries() -> list[tuple[str, dict]]:
    """(target folder name, {file, repo, commit, path, sha256}) for every manifest entry."""
    out = []
    wild = PAPER / "wild_logs"
    for labels in sorted(wild.glob("labels_*.json")) + sorted(wild.glob("heldout*/labels_*.json")):
        out += [("wild_logs", e) for e in json.loads(labels.read_text())]
    for folder, manifest in (("public_collapse/logs", PAPER / "data/public_collapse/manifest.json"),
                             ("fresh_runs", PAPER / "data/fresh_runs/manifest.json")):
        out += [(folder, e) for e in json.loads(manifest.read_text())["runs"]]
    out += [("external_logs", {"file": e["file"], "repo": e["source_repo"], "commit": e["commit"],
                               "path": e["path_in_repo"], "sha256": e["sha256"]})
            for e in json.loads((PAPER / "real_log_labels.json").read_text()) if e.get("where") == "external"]
    out += [("real_run_logs", e) for e in json.loads((PAPER / "real_run_manifest.json").read_text())]
    lacking = [e.get("file") for _, e in out if not all(e.get(k) for k in FIELDS)]
    if lacking:
        raise SystemExit(f"manifest entries without all of {', '.join(FIELDS)}: {lacking[:5]}")
    return out


def _git_dir(repo: str) -> Path | None:
    base = MIRROR / repo.replace("/", "+")
    return next((d for d in (base / "repo" / ".git", base / "repo") if (d / "HEAD").is_file()), None)


def _restore(folder: Path, entry: dict) -> str:
    """'present', 'written', or why the file was not written."""
    target = folder / entry["file"]
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == entry["sha256"]:
        return "present"
    git = _git_dir(entry["repo"])
    if git is None:
        return "no snapshot"
    spec = f"{entry['commit']}:{entry['path']}"
    shown = subprocess.run(["git", f"--git-dir={git}", "show", spec], capture_output=True)
    if shown.returncode:
        return "commit or path not in the snapshot"
    if hashlib.sha256(shown.stdout).hexdigest() != entry["sha256"]:
        return "sha256 differs"
    folder.mkdir(parents=True, exist_ok=True)
    target.write_bytes(shown.stdout)
    return "written"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", action="store_true", help="print the repositories still to fetch, and stop")
    parser.add_argument("--into", type=Path, default=ROOT.parent, help="where the target folders go (default ..)")
    args = parser.parse_args()
    entries = _entries()
    if args.repos:
        missing = sorted({e["repo"] for folder, e in entries
                          if not (args.into / folder / e["file"]).is_file() and _git_dir(e["repo"]) is None})
        print("\n".join(missing))
        return 0
    counts: dict[str, int] = {}
    skipped: dict[tuple[str, str], int] = {}
    for folder, entry in entries:
        why = _restore(args.into / folder, entry)
        counts[why] = counts.get(why, 0) + 1
        if why not in ("present", "written"):
            skipped[entry["repo"], why] = skipped.get((entry["repo"], why), 0) + 1
    for (repo, why), n in sorted(skipped.items()):
        print(f"skipped {n} file(s) of {repo}: {why}", file=sys.stderr)
    print(f"{len(entries)} manifest entries: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
