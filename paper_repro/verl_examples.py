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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _example_scripts import git_dir, read_all, tally  # noqa: E402

REPO, COMMIT = "volcengine/verl", "b178a3cd5"  # v0.7.0-125, 2026-01-29: the commit whose examples were read
QUICK = 20  # --quick: the first scripts in path order


def main() -> None:
    clone, quick = git_dir(__doc__.splitlines()[0], "verl", Path("/work/.mirror/volcengine+verl/repo"), REPO)
    if clone is None:
        return
    rows = read_all(clone, COMMIT, "examples", QUICK if quick else None)
    for path, said in rows:
        print(f"{path}: {said}")
    print("\n" + "\n".join(tally(rows, REPO, COMMIT)))


if __name__ == "__main__":
    sys.exit(main())
