"""Check: `predict --config run.sh` reads OpenRLHF's own example launch scripts, or refuses each for a stated reason.

Every `examples/scripts/*.sh` of OpenRLHF/OpenRLHF at each of COMMITS (read with git from a local clone, nothing copied
into this repository) through `predict.read_run_config`, as `predict --config` reads it: c1ba971c, the last release of
its flat argument names (`--n_samples_per_prompt`), and 3c3be623, its dotted ones (`--rollout.n_samples_per_prompt`).
Each script's outcome: read (its T, G, N, lr), or the first words of its one-line refusal. What a refusal may rightly
say: an estimator outside the group model (gae: a critic; reinforce), a script that runs no OpenRLHF PPO trainer (SFT,
DPO, reward model, docker, a server), or an argument the trainer does not have (argparse would stop the run too).
Measured 2026-12-03 (this check's commit): c1ba971c 4 of 17 read, 3 refused as critic PPO (no --advantage_estimator:
gae), 1 for an argument its own train_ppo_ray lacks (--vllm_enable_is_correction; it has --enable_vllm_is_correction),
9 run no PPO trainer; 3c3be623 5 of 17 read, 3 critic PPO, 9 no PPO trainer. SPOT: three read by hand from the
scripts' arguments (T = max_epochs x rollout_batch_size x n_samples_per_prompt / train_batch_size, N = train_batch_size
/ n_samples_per_prompt), compared with the reader's.

    python paper_repro/openrlhf_examples.py [--quick] --openrlhf /path/to/OpenRLHF/git-dir   # skips where absent
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _example_scripts import git_dir, read_all, tally  # noqa: E402

REPO = "OpenRLHF/OpenRLHF"
COMMITS = ("c1ba971c", "3c3be623")  # 2026-04-13, flat names; 2026-08-13, dotted names (the rename: ed62d0e2)
QUICK = 6  # --quick: the first scripts of each commit in path order
SPOT = {  # (commit, script): (T, G, N, lr) read by hand from its arguments
    ("c1ba971c", "examples/scripts/train_prorlv2_math_hybrid_engine.sh"): (8, 16, 64, 1e-6),  # 1 x 512 x 16 / 1024
    ("c1ba971c", "examples/scripts/train_reinforce_baseline_hybrid_engine.sh"): (1, 8, 128, 5e-7),  # 1 x 128 x 8 / 1024
    ("3c3be623", "examples/scripts/train_dapo_ray_hybrid_engine.sh"): (8, 8, 16, 5e-7),  # 1 x 128 x 8 / 128 (dotted)
}


def main() -> None:
    clone, quick = git_dir(__doc__.splitlines()[0], "openrlhf", Path("/work/.mirror/OpenRLHF+OpenRLHF/repo"), REPO)
    if clone is None:
        return
    for commit in COMMITS:
        rows = read_all(clone, commit, "examples/scripts", QUICK if quick else None)
        for path, said in rows:
            print(f"{commit} {path}: {said}")
        print("\n" + "\n".join(tally(rows, REPO, commit)))
        for path, said in [(p, said) for p, said in rows if (commit, p) in SPOT]:
            T, G, N, lr = SPOT[(commit, path)]
            agree = said == f"read: T = {T}, G = {G}, N = {N}, lr {lr:g}"
            print(f"  by hand {path}: T = {T}, G = {G}, N = {N}, lr {lr:g}: {'agrees' if agree else 'DIFFERS: ' + said}")
        print()


if __name__ == "__main__":
    sys.exit(main())
