"""docs/outputs.md names every field `predict --json` and `diagnose --json` write, and no field the code no longer
writes: both commands run in-process on inputs made here (a TRL and a verl config, a pilot log with the metrics
TRL logs, finished runs, pass rates, logs with findings and a limit cycle), every key path of their JSON is
collected, and each must be a row of the page's tables in its command's section."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from _finished_runs import finished_runs
from gspo_dynamics.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "outputs.md"
# Objects documented once wherever they appear: the first prefix found is read as the second.
REBASE = (("details.implications", "implications"), ("verdicts[].evidence[]", "evidence[]"),
          ("findings[].evidence[]", "evidence[]"))
SHARED = "## `implications`"  # the section both commands' JSON use
NUMBER_KEY = re.compile(r"^-?\d+(\.\d+)?(e-?\d+)?$")  # a key that is data: G, T, a stiffness, a success rate


def documented() -> dict[str, set[str]]:
    """The first column's path of every table row, by `## ` section heading."""
    sections: dict[str, set[str]] = {}
    heading = ""
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            heading = line
            sections[heading] = set()
        match = re.match(r"\|\s*`([^`]+)`\s*\|", line)
        if match and heading:
            sections[heading].add(match.group(1))
    return sections


def fields_of(section_start: str) -> set[str]:
    sections = documented()
    return {f for heading, found in sections.items() if heading.startswith((section_start, SHARED)) for f in found}


def key_paths(obj, path: str = "") -> set[str]:
    """Every key path of a JSON value: lists as `name[]`, keys that are numbers as `*`."""
    out = {path} if path else set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            name = "*" if NUMBER_KEY.match(key) else key
            out |= key_paths(value, f"{path}.{name}" if path else name)
    elif isinstance(obj, list):
        for item in obj:
            out |= {p for p in key_paths(item, path + "[]") if p != path + "[]"}
    return out


def rebased(path: str) -> str:
    for old, new in REBASE:
        if path == old or path.startswith(old + "."):
            return new + path[len(old):]
    return path


def run_json(capsys, *args) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def pilot_rows(n: int = 60) -> list[dict]:
    """A TRL-keyed pilot that rises to 0.8, with the zero-std share, entropy, KL, clip fraction and length."""
    rng = np.random.default_rng(0)
    t = np.arange(1, n + 1)
    reward = 0.8 - 0.6 * np.exp(-t / 12) + 0.02 * rng.standard_normal(n)
    return [{"step": int(s), "reward": float(r), "reward_std": 0.3, "frac_reward_zero_std": 0.3 + 0.05 * math.cos(s),
             "entropy": 0.8 - 0.002 * s, "kl": 0.001 * s, "learning_rate": 1e-6, "clip_ratio/region_mean": 0.01,
             "completions/mean_length": 200.0, "grad_norm": 0.5} for s, r in zip(t, reward)]


def troubled_rows(n: int = 80) -> list[dict]:
    """A reward ringing with period 8 around a rise, a gradient-norm spike, most completions truncated late and a
    NaN loss at the end."""
    t = np.arange(1, n + 1)
    reward = 0.6 - 0.4 * np.exp(-t / 10) + 0.15 * np.sin(2 * np.pi * t / 8)
    rows = [{"step": int(s), "reward": float(r), "reward_std": 0.3, "frac_reward_zero_std": 0.2, "entropy": 0.6,
             "grad_norm": 50.0 if s == 40 else 1.0, "completions/clipped_ratio": 0.9 if s > n // 2 else 0.1,
             "completions/mean_length": 1000.0, "loss": float("nan") if s == n else 0.1} for s, r in zip(t, reward)]
    return rows


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("outputs")
    trl = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 4,
           "gradient_accumulation_steps": 8, "steps_per_generation": 32, "beta": 0.04, "max_steps": 240}
    verl = {"data": {"train_batch_size": 512}, "algorithm": {"adv_estimator": "grpo"},
            "trainer": {"total_training_steps": 300, "logger": ["console"]},
            "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "ppo_mini_batch_size": 128, "ppo_epochs": 1,
                                            "clip_ratio_c": 3.0, "use_kl_loss": True, "kl_loss_coef": 0.001,
                                            "entropy_coeff": 0.01, "policy_loss": {"loss_mode": "vanilla"}},
                                  "rollout": {"n": 8, "name": "vllm"}}}
    (d / "trl.json").write_text(json.dumps(trl))
    (d / "verl.yaml").write_text(yaml.safe_dump(verl))
    (d / "runs").mkdir()
    rates = np.random.default_rng(1).beta(0.8, 0.4, 200)
    (d / "rates.txt").write_text("\n".join(f"{p:.3f}" for p in rates))
    return {"trl": str(d / "trl.json"), "verl": str(d / "verl.yaml"), "rates": str(d / "rates.txt"),
            "pilot": jsonl(d / "pilot.jsonl", pilot_rows()), "troubled": jsonl(d / "troubled.jsonl", troubled_rows()),
            "short": jsonl(d / "short.jsonl", pilot_rows(4)), "runs": [str(p) for p in finished_runs(d / "runs")]}


@pytest.fixture(scope="module")
def predict_paths(inputs) -> set[str]:
    def run(*args) -> dict:  # capsys is function-scoped: the module's runs capture stdout themselves
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["predict", *args]) == 0
        return json.loads(out.getvalue())

    reports = [
        run("--config", str(ROOT / "examples" / "trl_grpo_config.yaml"), "--json"),
        run("--config", inputs["verl"], "--json"),
        run("--config", inputs["trl"], "--prior", *inputs["runs"], "--pass-rates", inputs["rates"], "--json"),
        run("--config", inputs["trl"], "--pilot", inputs["pilot"], "--prior", *inputs["runs"], "--json"),
    ]
    return {rebased(p) for report in reports for p in key_paths(report)}


def test_every_predict_field_is_documented(predict_paths):
    missing = sorted(predict_paths - fields_of("## `predict --config --json`"))
    assert not missing, f"docs/outputs.md does not name these predict --json fields: {missing}"


def test_every_bandit_field_is_documented(capsys):
    fast = ("--no-from-start", "--t-max", "200")  # the from-start scan costs seconds; its fields are written anyway
    paths = {p for args in (["-G", "8"], ["-G", "8", "--optimizer", "adam", "--lr", "0.01"])
             for p in key_paths(run_json(capsys, "predict", "--testbed", "bandit", *args, *fast, "--json"))}
    missing = sorted(paths - fields_of("## `predict --testbed bandit`"))
    assert not missing, f"docs/outputs.md does not name these predict --testbed bandit fields: {missing}"


def test_every_diagnose_field_is_documented(inputs, capsys):
    reports = [run_json(capsys, "diagnose", inputs["pilot"], "--config", inputs["trl"], "--json"),
               run_json(capsys, "diagnose", inputs["troubled"], "--lr", "1e-6", "-T", "4", "-G", "8", "--json"),
               run_json(capsys, "diagnose", inputs["short"], "--json")]
    paths = {rebased(p) for report in reports for p in key_paths(report)}
    assert {"evidence[].period_steps", "evidence[].first_step", "implications.theory_inputs"} <= paths  # the inputs bite
    missing = sorted(paths - fields_of("## `diagnose --json`"))
    assert not missing, f"docs/outputs.md does not name these diagnose --json fields: {missing}"


def test_every_documented_field_is_written_by_the_code():
    """Each table row's last key is a name the package still writes: a quoted string or a field / keyword name in
    gspo_dynamics/ (a field the code dropped leaves its row behind, which this catches)."""
    source = "\n".join(p.read_text() for p in (ROOT / "gspo_dynamics").rglob("*.py"))
    names = set(re.findall(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']""", source))  # quoted strings: dict keys
    names |= set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*[=:]", source))  # keywords and dataclass fields
    json_sections = ("## `predict --config --json`", "## `predict --testbed bandit`", "## `diagnose --json`", SHARED)
    fields = {f for heading, found in documented().items() if heading.startswith(json_sections) for f in found}
    stale = []
    for field in sorted(fields):
        last = [part for part in field.replace("[]", "").split(".") if part != "*"][-1]
        if last not in names:
            stale.append(field)
    assert not stale, f"docs/outputs.md names fields the code does not write: {stale}"
