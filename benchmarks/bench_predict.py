"""Benchmark: `gspo-dynamics predict --config C --pilot L --json` on a 1,000-row pilot (target: an
answer in under 2 s on this machine).

Writes a TRL GRPOConfig YAML and a TRL trainer_state.json of --rows log_history rows (a saturating
reward with binomial sampling noise at the config's N G responses per step, its reward_std and
frac_reward_zero_std; synthetic numbers: this measures speed, correctness lives in tests/), then
times, best of --repeats:

    command     the whole command in a fresh interpreter (what a user waits for: start-up, imports,
                reading, the fit, the forecast, the JSON), checked to exit 0 and print one JSON object
    in-process  read_run_config + pilot_forecast + to_json in this process (imports paid once)

    cd /work/main && .venv/bin/python benchmarks/bench_predict.py [--rows N] [--repeats K] [--no-write]

Replaces the section "Predicting from a config and a pilot" of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _results import cpu_model, replace_section

from gspo_dynamics.predict import pilot_forecast, read_run_config

SECTION = "## Predicting from a config and a pilot"
TARGET_S = 2.0
CONFIG = ("learning_rate: 1e-6\nnum_generations: 8\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 4\n"
          "steps_per_generation: 8\nbeta: 0.04\nmax_steps: 4000\noutput_dir: out\n")  # the run 4x the pilot: its end forecast
G, N = 8, 4  # the config's group size and prompts per optimizer step (8 x 4 / 8)


def write_pilot(path: Path, rows: int, seed: int = 0) -> None:
    """A TRL trainer_state.json: p_t = 0.9 - 0.6 exp(-t / 150), rewards of N G Bernoulli(p_t) draws."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, rows + 1)
    p = 0.9 - 0.6 * np.exp(-t / 150)
    draws = rng.random((rows, N, G)) < p[:, None, None]
    history = [{"step": int(s), "reward": float(d.mean()), "reward_std": float(d.std(axis=-1, ddof=1).mean()),
                "frac_reward_zero_std": float((d.all(-1) | ~d.any(-1)).mean()), "learning_rate": 1e-6}
               for s, d in zip(t, draws)]
    path.write_text(json.dumps({"log_history": history, "global_step": rows}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", dest="write", action="store_false")
    args = parser.parse_args()
    if args.rows < 8 or args.repeats < 1:
        raise SystemExit("bench_predict: --rows must be >= 8 and --repeats >= 1")
    with tempfile.TemporaryDirectory() as d:
        config, pilot = Path(d) / "grpo.yaml", Path(d) / "trainer_state.json"
        config.write_text(CONFIG)
        write_pilot(pilot, args.rows)
        command = [sys.executable, "-m", "gspo_dynamics.cli.main", "predict", "--config", str(config), "--pilot", str(pilot), "--json"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        wall = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
            wall.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                raise SystemExit(f"bench_predict: the command failed: {proc.stderr.strip()}")
            report = json.loads(proc.stdout)
        inproc = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            json.dumps(pilot_forecast(read_run_config(config), str(pilot)).to_json(), allow_nan=False)
            inproc.append(time.perf_counter() - t0)
    best, best_in = min(wall), min(inproc)
    report = report["details"]  # the answer's derivation (docs/outputs.md: predict's `details`)
    end = report["end_reward"]
    told = (f"{end['value']:.3f}, 90% interval [{end['interval'][0]:.3f}, {end['interval'][1]:.3f}]"
            if end["value"] is not None and end["interval"] is not None else "not identified by the pilot (no band)")
    lines = [SECTION, "",
             f"`cd /work/main && .venv/bin/python benchmarks/bench_predict.py` ({datetime.date.today()}, {cpu_model()}, "
             f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}): a TRL GRPOConfig YAML and a {args.rows}-row TRL "
             f"trainer_state.json pilot (a saturating reward with binomial noise at N G = {N * G}); best of {args.repeats}.",
             "", "| what | seconds | target |", "|---|---|---|",
             f"| `gspo-dynamics predict --config C --pilot L --json`, fresh interpreter | {best:.2f} | < {TARGET_S:g}: "
             f"{'met' if best < TARGET_S else 'NOT met'} |",
             f"| in-process: read_run_config + pilot_forecast + to_json | {best_in:.3f} | - |",
             "", f"The forecast's fit: {report['implications']['plateau']['value']:.3f} plateau over {report['pilot_steps']} steps "
             "(the curve that made the pilot plateaus at 0.9); the reward at the run's end (max_steps "
             f"{end['run_steps']}, {end['ratio']:g} times the pilot, timed with the rest): {told}."]
    print("\n".join(lines))
    if args.write:
        replace_section(SECTION, "\n".join(lines))


if __name__ == "__main__":
    main()
