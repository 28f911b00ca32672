"""Check: `predict --config run.sh` reads verl's own example launch scripts, or refuses each for a stated reason.

Every `examples/**/*.sh` of volcengine/verl at COMMIT (read with git from a local clone, nothing copied into this
repository) through `predict.read_run_config`, as `predict --config` reads it. Each script's outcome: read (its T, G,
N, lr), or the first words of its one-line refusal. What a refusal may rightly say: an estimator outside the group
model (gae, remax, reinforce_plus_plus, ...), a script that runs no verl PPO trainer (SFT, generation), a base config
other than verl's own. Measured 2026-12-02 at COMMIT, code 3435a75 -> this check's commit: 46 -> 79 of 139 read (the
33 gained: Megatron runs on verl's own ppo_megatron_trainer base; overrides grouped in arrays, multi-line strings and
$(( )) arithmetic), none of the 46 read before reading differently.

    python paper_repro/verl_examples.py [--quick] --verl /path/to/verl/git-dir   # skips, saying so, where absent
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
from pathlib import Path

from gspo_dynamics import ConfigError
from gspo_dynamics.predict import read_run_config

REPO, COMMIT = "volcengine/verl", "b178a3cd5"  # v0.7.0-125, 2026-01-29: the commit whose examples were read
QUICK = 20  # --quick: the first scripts in path order


def scripts(git_dir: Path) -> list[str]:
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", COMMIT, "examples"],
                         capture_output=True, text=True, check=True).stdout
    return sorted(p for p in out.splitlines() if p.endswith(".sh"))


def outcome(git_dir: Path, path: str, folder: Path) -> str:
    text = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{COMMIT}:{path}"], capture_output=True,
                          text=True, check=True).stdout
    local = folder / path.replace("/", "__")
    local.write_text(text, encoding="utf-8")
    try:
        hp = read_run_config(local).hparams
    except ConfigError as error:
        return "refused: " + " ".join(str(error).replace(str(local), "<script>").split()[:6])
    return f"read: T = {hp.refresh_interval}, G = {hp.group_size}, N = {hp.num_groups}, lr {hp.lr:g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verl", type=Path, default=Path("/work/.mirror/volcengine+verl/repo"),
                        help="a git directory of volcengine/verl holding COMMIT")
    parser.add_argument("--quick", action="store_true", help="the first QUICK scripts only")
    parser.add_argument("--no-record", action="store_true", help="nothing is recorded in any case (a measurement)")
    args = parser.parse_args()
    if not (args.verl / "HEAD").is_file():
        print(f"[SKIP] no verl git directory at {args.verl} (fetch {REPO} and pass --verl)")
        return
    paths = scripts(args.verl)[:QUICK] if args.quick else scripts(args.verl)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [(p, outcome(args.verl, p, Path(tmp))) for p in paths]
    for path, said in rows:
        print(f"{path}: {said}")
    kinds = collections.Counter(said.split(":")[0] if said.startswith("read") else said for _, said in rows)
    print(f"\n{REPO} at {COMMIT}: {kinds['read']} of {len(rows)} example scripts read")
    for said, count in kinds.most_common():
        if said != "read":
            print(f"  {count:3d}  {said}")


if __name__ == "__main__":
    sys.exit(main())
