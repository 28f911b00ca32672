"""Issue 49, items 4 and 5: `predict` and `diagnose` print no number the data do not support (the rules of
tests/_sanity.py), and every pilot the CLI accepts gets an answer or one clear reason (exit 2, one line, no
internal check's words). The logs are benchmarks/absurd_numbers.py's synthetic ones, each run the way that sweep
runs every real log."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from _sanity import Context, check_json, check_text

from gspo_dynamics.cli.main import main
from gspo_dynamics.fit._closed_form import FitResult
from gspo_dynamics.fit._uncertainty import covariance

CASES = ("ramp_0.01_1.01", "flat_noisy", "short_7", "step_tau0", "slow_unidentified")


@pytest.fixture(scope="module")
def sweep(load_script, tmp_path_factory):
    module = load_script("benchmarks", "absurd_numbers")
    logs = {p.name.removeprefix("synthetic_").removesuffix(".jsonl"): p
            for p in module.synthetic_logs(tmp_path_factory.mktemp("logs"))}
    return module, logs


@pytest.mark.parametrize("case", CASES)
def test_every_pilot_and_diagnosis_of_the_case_is_sane(sweep, case):
    """diagnose (JSON, --explain) and predict at 7, 8, 9 points and 10% and 25% of the log: no absurd number, no
    internal error (the sweep's own rules)."""
    module, logs = sweep
    result = module.one_log(logs[case], configs=("with_length",))
    assert result["internal"] == [] and result["absurd"] == [], (result["internal"] + result["absurd"])[:5]


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_straight_ramp_gives_no_plateau(sweep, capsys):
    """0.01 -> 1.01 over 101 rows: the fit's plateau (hundreds) is no reading; diagnose says the plateau is not
    identified, in the text and as nulls with the reason in the JSON."""
    _, logs = sweep
    path = str(logs["ramp_0.01_1.01"])
    code, text, _ = _run(capsys, "diagnose", path)
    do = next(line for line in text.splitlines() if line.startswith("do"))
    assert code == 0 and "not identify" in do and not any(c.isdigit() for c in do.split("(")[0]), do
    code, out, _ = _run(capsys, "diagnose", path, "--json")
    imp = json.loads(out)["implications"]
    assert imp["plateau"] is None and imp["remaining_rise"] is None and imp["time_to_plateau"] is None
    assert {"plateau", "remaining_rise", "time_to_plateau"} <= set(imp["unidentified"])


@pytest.mark.parametrize("rows, pilot_steps", [(7, None), (20, 7)])
def test_a_seven_point_pilot_is_one_clear_refusal(tmp_path, capsys, rows, pilot_steps):
    """Seven reward points, from a 7-row log or --pilot-steps 7: exit 2, one line that says how many points a
    forecast needs and how many the pilot has."""
    log = tmp_path / "pilot.jsonl"
    log.write_text("".join(json.dumps({"step": i + 1, "reward": 0.2 + 0.01 * i}) + "\n" for i in range(rows)))
    config = tmp_path / "trl.json"
    config.write_text(json.dumps({"learning_rate": 1e-6, "num_generations": 8, "max_steps": 100}))
    argv = ["predict", "--config", str(config), "--pilot", str(log)] + ([] if pilot_steps is None else
                                                                        ["--pilot-steps", str(pilot_steps)])
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "at least 8" in err and f"has {rows}" in err and "must be an integer" not in err


def test_a_step_in_the_first_rows_gives_tau_zero_without_an_error():
    """A fit whose tau is ~1e-19 (the curve a step at its start): the covariance's finite differences stay inside
    tau > 0 or say the parameter is not identified (inf), never a ConfigError about tau."""
    t = np.arange(15, dtype=float)
    fit = FitResult("exponential", {"r_inf": 0.496, "r0": 0.517, "tau": 4.53e-19}, 0.02, 0.01, t.size)
    names, cov = covariance(fit, t, 0.5 + 0.05 * np.sin(t))
    assert names == ("r_inf", "r0", "tau") and not np.all(np.isfinite(np.diag(cov)))


def test_the_checker_flags_what_the_issue_found():
    """The rules catch the numbers the issue reports: a remaining rise of 3.7e3 on a [0, 1] reward with stderr
    2.9e5, a plateau step of 2.0e3 on a 200-step run, a plateau of 321.8 on a 0.01-1.01 ramp, lr up 2.8e3x, inf."""
    ctx = Context.of(np.linspace(0.1, 0.6, 50), 50, run_steps=200, lr=1e-6)
    found = check_json({"details": {"implications": {"remaining_rise": {"value": 3.7e3, "stderr": 2.9e5}},
                                    "max_safe_lr": 2.8e-3},
                        "forecast": {"plateau": {"value": 0.5, "step": 2.0e3}}}, ctx)
    assert sorted(f.split()[0] for f in found) == ["lr_multiple", "rise", "stderr", "step"]
    ramp = Context.of(np.linspace(0.01, 1.01, 101), 101)
    assert check_text("do         the fitted plateau 321.8 is above the last value; train longer", ramp)
    assert check_text("verdict: safe (learning_rate can rise 2.8e+03x before the linear bound)", ramp)
    assert check_text("verdict: safe (how far lr can rise is not measured (the linear model's bound, 2.8e+03x lr, ...", ramp)
    assert check_text("theory     stiffness/step 0.1 +- inf", ramp) and check_json({"x": math.inf}, ramp)
    assert not check_text("forecast: plateau 0.532, within 5% of it from step 143", ctx)


def test_a_pilot_pinned_at_one_value_gives_no_rise_in_noise_units(tmp_path, capsys):
    """One row at 0.28, then the reward pinned at 0 (a run that crashed on its first update): the fit's residual std
    is float rounding, so the rise is not said in its units (it was '2.1e+15 noise std')."""
    log = tmp_path / "pilot.jsonl"
    log.write_text("".join(json.dumps({"step": i + 1, "reward": 0.28 if i == 0 else 0.0}) + "\n" for i in range(40)))
    config = tmp_path / "trl.json"
    config.write_text(json.dumps({"learning_rate": 1e-2, "num_generations": 8, "max_steps": 200}))
    code, out, _ = _run(capsys, "predict", "--config", str(config), "--pilot", str(log))
    assert code == 0 and "noise std" not in out
    assert not any(abs(float(x)) > 1e6 for x in re.findall(r"\d+(?:\.\d+)?e[+-]?\d+", out)), out


def test_an_8_point_pilots_rise_is_measured_between_two_windows_that_do_not_overlap():
    """An 8-point pilot's first and last HELD_STEPS (8) rewards are one window, so its rise read 0 noise std whatever
    it did (audit C1); its first and last 4 are measured instead."""
    from types import SimpleNamespace

    from gspo_dynamics.predict._pilot_headline import rise_in_noise

    r = np.array([0.1, 0.12, 0.11, 0.13, 0.3, 0.32, 0.31, 0.33])
    f = SimpleNamespace(pilot=(np.arange(1, 9), r), fit=SimpleNamespace(residual_std=0.01))
    assert rise_in_noise(f) == pytest.approx((0.315 - 0.115) / 0.01)
    fallen = SimpleNamespace(pilot=(np.arange(1, 9), r[::-1]), fit=SimpleNamespace(residual_std=0.01))
    assert rise_in_noise(fallen) == pytest.approx(-(0.315 - 0.115) / 0.01)  # a fall is no rise (audit E)
