"""A framework's own example launch scripts read as `predict --config` reads them (`verl_examples.py`,
`openrlhf_examples.py`): each script of a commit, read with git from a local clone (nothing copied into this
repository), gives its T, G, N and lr, or the first words of its one-line refusal."""

from __future__ import annotations

import argparse
import collections
import subprocess
import tempfile
from pathlib import Path

from gspo_dynamics import ConfigError
from gspo_dynamics.predict import read_run_config


def scripts(git_dir: Path, commit: str, folder: str) -> list[str]:
    """The .sh files under `folder` at `commit`, in path order."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", commit, folder],
                         capture_output=True, text=True, check=True).stdout
    return sorted(p for p in out.splitlines() if p.endswith(".sh"))


def outcome(git_dir: Path, commit: str, path: str, scratch: Path) -> str:
    """'read: T = .., G = .., N = .., lr ..' or 'refused: <its first words>' for the script `path` at `commit`."""
    text = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True,
                          text=True, check=True).stdout
    local = scratch / f"{commit}__{path.replace('/', '__')}"
    local.write_text(text, encoding="utf-8")
    try:
        hp = read_run_config(local).hparams
    except ConfigError as error:
        return "refused: " + " ".join(str(error).replace(str(local), "<script>").split()[:6])
    return f"read: T = {hp.refresh_interval}, G = {hp.group_size}, N = {hp.num_groups}, lr {hp.lr:g}"


def tally(rows: list[tuple[str, str]], repo: str, commit: str) -> list[str]:
    """The summary lines: how many of the scripts were read, then each refusal's count."""
    kinds = collections.Counter(said.split(":")[0] if said.startswith("read") else said for _, said in rows)
    return ([f"{repo} at {commit}: {kinds['read']} of {len(rows)} example scripts read"]
            + [f"  {count:3d}  {said}" for said, count in kinds.most_common() if said != "read"])


def git_dir(description: str, option: str, default: Path, repo: str) -> tuple[Path | None, bool]:
    """(the clone's git directory, --quick) from the command line; None, said as `[SKIP]`, where it is absent."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(f"--{option}", type=Path, default=default, help=f"a git directory of {repo}")
    parser.add_argument("--quick", action="store_true", help="the first scripts only")
    parser.add_argument("--no-record", action="store_true", help="nothing is recorded in any case (a measurement)")
    args = parser.parse_args()
    found = getattr(args, option)
    if not (found / "HEAD").is_file():
        print(f"[SKIP] no {repo} git directory at {found} (fetch {repo} and pass --{option})")
        return None, args.quick
    return found, args.quick


def read_all(clone: Path, commit: str, folder: str, first: int | None) -> list[tuple[str, str]]:
    """(path, `outcome`) of every script under `folder` at `commit`, or of its `first` ones in path order."""
    paths = scripts(clone, commit, folder)
    with tempfile.TemporaryDirectory() as tmp:
        return [(p, outcome(clone, commit, p, Path(tmp))) for p in paths[:first]]
