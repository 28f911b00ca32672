"""predict's verdict and its changes (`predict._headline`, `predict._pilot_headline`): a config without a clip at
T > 1 is at risk before any pilot, in its own keys, and the change it names reads back as a clip or as T = 1; every
verdict but safe names a change, on every path (config-only and pilot); the lr margin is claimed only up to
LR_REACH; a fall is unsafe only where it clears the sampling noise of its rows."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from test_fall_chance import both_rules_pilot
from test_pilot import write_log

from gspo_dynamics.fit import BLOCK, Z_FALL, Fall
from gspo_dynamics.predict import config_forecast, config_headline, pilot_forecast, pilot_headline, read_run_config
from gspo_dynamics.predict import _pilot_headline, _swing
from gspo_dynamics.predict._clip_modes import NO_CLIP_EDGE, unclipped
from gspo_dynamics.predict._fall_chance import LR_REACH

VERL_BASE = {"algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 64}}


def verl(**actor) -> dict:
    return {**VERL_BASE, "actor_rollout_ref": {"rollout": {"n": 8}, "actor": {"ppo_mini_batch_size": 32,
                                                                            "optim": {"lr": 1e-6}, **actor}}}


TRAINER = {"task": "pattern", "model": "100k"}
# configs with no band edge at T > 1 (`predict._clip_modes.unclipped`), one per way a framework writes it
UNCLIPPED = {
    "trl epsilon 1e9, num_iterations 2": {"learning_rate": 1e-6, "num_iterations": 2, "epsilon": 1e9},
    "trl epsilon_high 1e9, steps_per_generation 4": {"learning_rate": 1e-6, "steps_per_generation": 4,
                                                     "epsilon_high": 1e9},
    "trl sapo": {"learning_rate": 1e-6, "num_iterations": 2, "loss_type": "sapo"},
    "trl cispo": {"learning_rate": 1e-6, "steps_per_generation": 2, "loss_type": "cispo", "epsilon_high": 5.0},
    "verl gpg, ppo_epochs 2": verl(ppo_epochs=2, policy_loss={"loss_mode": "gpg"}),
    "verl clip_ratio_low/high 1e9": verl(clip_ratio_low=1e9, clip_ratio_high=1e9),
    "ours pg": {**TRAINER, "objective": "pg", "num_iterations": 2},
    "ours gspo clip_high 1e9": {**TRAINER, "objective": "gspo", "steps_per_generation": 2, "clip_high": 1e9},
    "theory's names": {"lr": 0.1, "refresh_interval": 2, "group_size": 8, "correction": "none"},
}
CLIPPED_OR_ON_POLICY = {
    "trl default clip, num_iterations 2": {"learning_rate": 1e-6, "num_iterations": 2},
    "trl epsilon 1e9 on-policy": {"learning_rate": 1e-6, "epsilon": 1e9},
    "verl default clip at T = 2": verl(),
    "verl clip_ratio 1e9 alone: verl >= 0.4 clips at clip_ratio_low/high": verl(clip_ratio=1e9),
    "verl gpg on-policy": {**verl(policy_loss={"loss_mode": "gpg"}), "data": {"train_batch_size": 32}},
    "ours grpo T = 2": {**TRAINER, "objective": "grpo", "steps_per_generation": 2},
    "a wide but real clip": {"learning_rate": 1e-6, "num_iterations": 2, "epsilon_high": 100.0},
}


def _applied(config: dict, change) -> dict:
    """`config` with one change's key set to its value (the framework's own key: nested for verl)."""
    out = json_copy(config)
    node, *path = [out, *change.key.split(".")]
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = change.value
    return out


def json_copy(d: dict) -> dict:
    return {k: json_copy(v) if isinstance(v, dict) else v for k, v in d.items()}


@pytest.mark.parametrize("name", UNCLIPPED)
def test_a_config_without_a_clip_at_t_above_1_is_at_risk_before_a_pilot(name):
    """At risk with T and the clip named in the config's keys; each change, applied alone through the same mapping,
    gives a band edge or T = 1 (an independent route: the reader, not the change's own arithmetic), and one of them
    is a clip."""
    config = UNCLIPPED[name]
    setup = read_run_config(config)
    assert setup.hparams.refresh_interval > 1 and unclipped(setup.hparams) is not None
    head = config_headline(config_forecast(setup))
    assert head.verdict == "at risk" and head.changes, head.lines()
    assert f"T = {setup.hparams.refresh_interval} optimizer steps per rollout" in head.reason
    assert "off-policy" in head.reason and "theory.collapse (2), (4)" in head.reason
    fixed = []
    for change in head.changes:
        hp = read_run_config(_applied(config, change)).hparams
        fixed.append(("clip" if unclipped(hp) is None else "") + ("T=1" if hp.refresh_interval == 1 else ""))
    assert any(f.startswith("clip") for f in fixed) or all(f for f in fixed), (head.lines(), fixed)
    # the clip's changes together (without T = 1) give a band edge at the config's own T
    clip_only = config
    for change in head.changes:
        if change.key != getattr(setup.keys, "refresh", "refresh_interval") and change.key != getattr(setup.keys, "passes", ""):
            clip_only = _applied(clip_only, change)
    hp = read_run_config(clip_only).hparams
    assert unclipped(hp) is None and hp.refresh_interval == setup.hparams.refresh_interval


@pytest.mark.parametrize("name", CLIPPED_OR_ON_POLICY)
def test_a_clip_or_t_equal_1_leaves_the_config_to_its_pilot(name):
    setup = read_run_config(CLIPPED_OR_ON_POLICY[name])
    assert config_headline(config_forecast(setup)).verdict == "unknown until a pilot"


@pytest.mark.parametrize("name", [n for n in CLIPPED_OR_ON_POLICY if "on-policy" not in n])
def test_a_config_alone_at_t_above_1_with_a_clip_advises_no_t(name):
    """The linear model's bound at T is settled from the config alone ('known before a run'), but whether a run
    comes near it is the curvature's, which only a pilot measures: no change beside "unknown until a pilot"."""
    setup = read_run_config(CLIPPED_OR_ON_POLICY[name])
    head = config_headline(config_forecast(setup))
    assert setup.hparams.refresh_interval > 1 and head.verdict == "unknown until a pilot"
    assert head.changes == () and "change: none" in head.lines()
    assert any("the linear model's lr bound (the reward's oscillation) falls with T" in s for s in head.settled)
    assert not any("x below" in s for s in head.settled)  # its factor, contradicted by real runs, is --explain's


def test_the_edge_too_wide_to_clip_is_past_every_limit_the_collapse_rule_was_set_on():
    """NO_CLIP_EDGE is the largest S H / (1 - z) over the pilots of paper_repro/pilot_forecast.py's cells (its
    comment): recomputed here from the shipped cells, so a refit of S or new cells that move it fail here."""
    import gzip
    import json
    from pathlib import Path

    from gspo_dynamics.predict import COLLAPSE_SPREAD

    cells = json.loads(gzip.open(Path(__file__).resolve().parents[2] / "paper_repro" / "data" /
                                 "pilot_forecast_cells.json.gz").read())
    limits = [COLLAPSE_SPREAD * c["entropy"] / c["signal_share"] for c in cells.values()
              if c.get("entropy") and c.get("signal_share")]
    assert len(limits) >= 100 and max(limits) == pytest.approx(NO_CLIP_EDGE, abs=0.01)


def test_t_equal_1_from_a_second_pass_sets_the_passes_back_to_1():
    """TRL num_iterations 2 at steps_per_generation = accumulation: no steps_per_generation gives T = 1 (it would be
    1/2), so the change is num_iterations: 1, which reads back as T = 1."""
    config = {"learning_rate": 1e-6, "num_iterations": 2, "loss_type": "sapo"}
    head = config_headline(config_forecast(read_run_config(config)))
    settings = [c.setting for c in head.changes]
    assert "num_iterations: 1" in settings and not any(s.startswith("steps_per_generation") for s in settings)
    assert read_run_config({**config, "num_iterations": 1}).hparams.refresh_interval == 1


def test_trl_and_verl_read_a_lower_bound_past_1_as_no_lower_clip():
    """TRL's epsilon and verl's clip_ratio_low >= 1 make 1 - eps <= 0, which clamps nothing: read, not refused."""
    for config, key in (({"learning_rate": 1e-6, "epsilon": 1e9}, "epsilon"),
                        (verl(clip_ratio_low=2.0, clip_ratio_high=0.28), "clip_ratio_low")):
        setup = read_run_config(config)
        assert setup.hparams.clip_low == pytest.approx(1.0, abs=1e-5)
        assert any(key in note and "no lower clip" in note for note in setup.notes)


# ---- every verdict path names its change --------------------------------------------------------------------------


def _fall(f, best: float, after: float, z: float = 10.0) -> Fall:
    steps = f.pilot[0]
    return Fall(fall=best - after, best=best, best_steps=(int(steps[4]), int(steps[7])), after=after,
                after_steps=(int(steps[-8]), int(steps[-5])), z=z, lost=True)


def _paths(tmp_path, monkeypatch) -> dict:
    """One PilotForecast per verdict path of `_pilot_headline._verdict` (fields set to reach it), with its verdict."""
    base = both_rules_pilot(tmp_path, np.full(60, 0.8))  # lr 0.1, T = 4, a stiffness, drift and entropy
    assert base.displacement is not None and base.max_safe_lr is not None
    held = base.held
    limit, lr = base.collapse_limit, base.config.setup.hparams.lr
    trl = read_run_config({"learning_rate": 0.1, "num_generations": 8, "per_device_train_batch_size": 32,
                           "steps_per_generation": 4, "loss_type": "sapo", "max_steps": 240})
    cfg = dataclasses.replace(base.config, setup=trl)
    return {
        "unsafe: lost": ("unsafe", dataclasses.replace(base, fall=_fall(base, 0.8, 0.1),  # held at 0.1: not back
                                                      pilot=(base.pilot[0], np.full_like(base.pilot[1], 0.1)))),
        "at risk: a dip": ("at risk", dataclasses.replace(base, fall=_fall(base, held + 0.05, held - 0.4))),
        "unsafe: past the collapse limit": ("unsafe", dataclasses.replace(base, displacement=2 * limit, survived=None)),
        "unsafe: overshoot": ("unsafe", dataclasses.replace(base, overshoot=True)),
        "unsafe: linear": ("unsafe", dataclasses.replace(base, max_safe_lr=lr / 2)),
        "at risk: near the collapse limit": ("at risk", dataclasses.replace(base, displacement=0.9 * limit, survived=None)),
        "at risk: within 2x of the linear bound": ("at risk", dataclasses.replace(base, max_safe_lr=1.5 * lr)),
        "at risk: the KL pull": ("at risk", dataclasses.replace(base, kl_pull=True)),
        "at risk: no clip, no drift": ("at risk", dataclasses.replace(base, config=cfg, displacement=None)),
        "at risk: the fall chance": ("at risk", dataclasses.replace(base, displacement=0.69 * limit, survived=None,
                                                                    max_safe_lr=None)),
    }


def test_every_verdict_but_safe_names_a_change_in_the_configs_keys(tmp_path, monkeypatch):
    """Every pilot path reaches its verdict and names at least one change; `change: none` only under safe. The fall
    chance's path is checked to be at risk by its chance alone; the swing's path with a swing forced in."""
    paths = _paths(tmp_path, monkeypatch)
    for name, (verdict, f) in paths.items():
        head = pilot_headline(f)
        assert head.verdict == verdict, (name, head.lines()[0])
        assert head.changes and "change: none" not in head.lines(), (name, head.lines())
        keys = getattr(f.config.setup, "keys", None)
        if keys is not None:  # the TRL path: TRL's own keys
            assert all(c.key in ("learning_rate", "loss_type", "epsilon_high", "steps_per_generation", "num_iterations",
                                 "num_generations") for c in head.changes), head.lines()
    base = both_rules_pilot(tmp_path, np.full(60, 0.8))
    calm = dataclasses.replace(base, fall=None, displacement=None, max_safe_lr=None, kl_pull=False)
    assert pilot_headline(calm).verdict == "unsure"
    monkeypatch.setattr(_pilot_headline, "reward_swings", lambda f: ("the pilot's reward swings (forced)", 0.95))
    monkeypatch.setattr(type(base.implications), "theory_calls_stable", lambda self: False)
    head = pilot_headline(calm)
    assert head.verdict == "at risk" and head.changes and "swings" in head.reason, head.lines()
    assert head.changes[0].setting == "refresh_interval: 1"  # T = 4: on-policy removes the stale lag


@pytest.mark.parametrize("name", [*UNCLIPPED, *CLIPPED_OR_ON_POLICY])
def test_no_config_only_verdict_other_than_waiting_for_a_pilot_says_change_none(name):
    config = {**UNCLIPPED, **CLIPPED_OR_ON_POLICY}[name]
    head = config_headline(config_forecast(read_run_config(config)))
    assert head.verdict in ("at risk", "unknown until a pilot")
    assert head.verdict == "unknown until a pilot" or "change: none" not in head.lines()


def test_safe_quotes_the_linear_bound_as_no_lr_margin_and_only_up_to_lr_reach(tmp_path):
    """The safe verdict says how far the lr can rise is not measured: the linear bound is on the reward's oscillation
    (real TRL runs fell 15-66x below it); its factor is quoted up to LR_REACH, past it as none shown below."""
    base = both_rules_pilot(tmp_path, np.full(60, 0.8))
    lr = base.config.setup.hparams.lr
    near = pilot_headline(dataclasses.replace(base, max_safe_lr=10 * lr, kl_pull=False))
    far = pilot_headline(dataclasses.replace(base, max_safe_lr=2.8e3 * lr, kl_pull=False))
    assert near.verdict == far.verdict == "safe"
    assert "the linear model's bound (10x lr) is on the reward's oscillation, not collapse" in near.margin
    assert f"none below {LR_REACH:g}x lr = {lr * LR_REACH:.3g}" in far.margin
    assert "2.8e+03" not in far.margin
    for head in (near, far):  # the bound is no margin against collapse: never quoted as one; a note of its own
        assert "how far lr can rise is not measured" in head.margin and "can rise 10x" not in head.margin
        assert "lr margin: how far lr can rise" in head.lines()[-1] and "rise" not in head.reason


def test_a_linear_bound_alone_does_not_vouch_for_a_run(tmp_path):
    """Where the collapse rule reads nothing (no drift at T > 1), the linear model's bound on the oscillation does
    not make the pilot safe: unsure, naming that bound and the column that would tell (public-collapse: haxiaww runs
    with a linear bound 30x away fell at 1x)."""
    base = both_rules_pilot(tmp_path, np.full(60, 0.8))
    lr = base.config.setup.hparams.lr
    head = pilot_headline(dataclasses.replace(base, max_safe_lr=10 * lr, displacement=None, kl_pull=False))
    assert head.verdict == "unsure" and "the linear model bounds only the reward's oscillation" in head.reason
    assert "the linear model bounds only the reward's oscillation: 10x lr" in head.reason
    assert head.tell and head.lines()[1] == f"to tell: {head.tell}" and head.to_json()["what_would_tell"] == head.tell


def test_lr_reach_is_the_top_of_the_grids_the_forecast_was_checked_on():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "paper_repro"))
    from _pilot_protocol import LR_FACTORS

    assert LR_REACH == max(LR_FACTORS)


# ---- a fall against the noise of its rows --------------------------------------------------------------------------


def noisy_pilot(tmp_path, per_row_groups: int, seed: int = 3):
    """A pass/fail reward at 0.5 for 16 rows, then 0.1 for 24 (a real loss of 0.4), each row the mean of N G
    completions drawn as such: N = `per_row_groups` groups of G = 4."""
    rng = np.random.default_rng(seed)
    n = per_row_groups * 4
    p = np.r_[np.full(16, 0.5), np.full(24, 0.1)]
    reward = rng.binomial(n, p) / n
    setup = read_run_config({"lr": 0.1, "group_size": 4, "num_groups": per_row_groups, "refresh_interval": 1})
    return pilot_forecast(setup, write_log(tmp_path / f"n{n}.jsonl", {"reward": reward}), reward_range=(0.0, 1.0))


def test_the_rows_noise_test_is_the_binomial_standard_error_of_two_block_means(tmp_path):
    """z = (b - a) / sqrt((b (1 - b) + a (1 - a)) / (BLOCK n)) for a [0, 1] reward, n = N G completions a row."""
    f = noisy_pilot(tmp_path, 8)
    assert f.fall is not None
    z, n = _pilot_headline.fall_in_row_noise(f)
    b, a = f.fall.best, f.fall.after
    assert n == 32 and z == pytest.approx((b - a) / math.sqrt((b * (1 - b) + a * (1 - a)) / (BLOCK * n)))


def test_a_fall_within_the_noise_of_few_completions_is_unsure_not_unsafe(tmp_path):
    """The same fall of 0.4 over rows of 4 completions (z against their binomial noise ~3) is unsure, with the
    group size whose rows would clear Z_FALL as what would tell and no lr cut (a real run that fell so at z = 3.8
    held: Sunshine535, 0.356 -> 0.455); over rows of 64 completions it is unsafe."""
    few = dataclasses.replace(noisy_pilot(tmp_path, 1), fall=None)
    many = noisy_pilot(tmp_path, 16)
    few = dataclasses.replace(few, fall=dataclasses.replace(many.fall))  # the same fall, read from rows of 4
    z, n = _pilot_headline.fall_in_row_noise(few)
    assert n == 4 and z < Z_FALL
    head = pilot_headline(few)
    assert head.verdict == "unsure" and "4 completions" in head.reason, head.lines()
    assert not any(c.key in ("lr", "learning_rate") for c in head.changes)
    G = next(c.value for c in head.changes if c.key == "group_size")
    assert G == math.ceil(4 * (Z_FALL / z) ** 2)
    assert pilot_headline(many).verdict == "unsafe" and _pilot_headline.fall_in_row_noise(many)[0] > Z_FALL


@pytest.mark.parametrize("name", ["trl sapo", "verl gpg, ppo_epochs 2", "ours pg"])
def test_the_config_only_at_risk_answer_leads_and_validates_against_the_schema(tmp_path, capsys, name):
    """Through the command: the verdict on line 1, a change on line 2, and --json valid against docs' schema."""
    import json
    from pathlib import Path

    import jsonschema

    from gspo_dynamics.cli.main import main

    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "predict.schema.json").read_text())
    path = tmp_path / "c.json"
    path.write_text(json.dumps(UNCLIPPED[name]))
    assert main(["predict", "--config", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("verdict: at risk (T = ") and any(line.startswith("change: ") for line in lines[1:3])
    assert main(["predict", "--config", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, schema)
    assert report["verdict"] == "at risk" and report["changes"]


@pytest.mark.parametrize("T, entropy, verdict", [(1, np.full(40, 0.8), "safe"), (1, None, "unsure"),
                                                  (4, np.full(40, 0.8), "unsure")])
def test_a_pilot_no_margin_rule_could_read_is_unsure_and_says_what_would_tell(tmp_path, T, entropy, verdict):
    """A pilot rising in a straight line: its rise never bends (no lr_max) and no move between refreshes is logged.
    At T = 1 the entropy's first updates are the collapse rule's whole reading (theory.collapse (6)): logged and not
    overshooting, the pilot is safe; not logged, or at T > 1 (D unread), no rule read it: unsure, naming the missing
    column in TRL's keys and no change."""
    rng = np.random.default_rng(0)
    columns = {"reward": 0.2 + 0.005 * np.arange(40) + 0.02 * rng.standard_normal(40)}
    if entropy is not None:
        columns["entropy"] = entropy
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8,
                             "steps_per_generation": T, "max_steps": 400})
    f = pilot_forecast(setup, write_log(tmp_path / "p.jsonl", columns), reward_range=(0.0, 1.0))
    head = pilot_headline(f)
    assert f.max_safe_lr is None and f.displacement is None and head.verdict == verdict, head.lines()
    if verdict == "unsure":
        tell = head.tell
        assert not head.changes and tell.startswith("a pilot that logs " + ("entropy" if T == 1 else "clip_ratio/*"))
        assert ("no token entropy" in head.reason) == (T == 1), head.lines()
    else:
        assert "did not overshoot" in head.reason


def test_a_pilot_longer_than_the_run_says_what_it_may_not_show_not_that_the_reward_will_not_rise():
    """A 40-step TRL run at G = 4: the power pilot is longer than the run. The plan says the whole run may not show the
    0.1 rise it sizes for, and on which assumption, never 'its reward will not rise' (audit H F7: four such runs rose)."""
    from gspo_dynamics.predict import config_forecast, config_headline, read_run_config

    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 4, "per_device_train_batch_size": 4,
                             "max_steps": 10})
    plan = config_headline(config_forecast(setup)).pilot_plan
    assert plan["steps"] == 10 and "will not rise" not in plan["why"]
    assert "may not show one above that noise" in plan["why"] and plan["why"].count("[0, 1]") == 1  # one hedge


def test_the_noise_line_of_a_step_holding_part_of_a_group_says_n_was_rounded_up():
    """4 completions per optimizer step at G = 8 (N = 0.5, read as 1 and said): the noise line's 1 / sqrt(N G) says it
    is at that rounded N, not contradicting the rounding line above it (audit s37c, an OpenRLHF script)."""
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 4,
                             "steps_per_generation": 2})
    noise = next(s for s in config_headline(config_forecast(setup)).settled if s.startswith("reward noise per step"))
    assert "1 / sqrt(8) at N rounded up to one group" in noise
    whole = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8})
    assert "rounded" not in next(s for s in config_headline(config_forecast(whole)).settled if s.startswith("reward noise"))


def test_a_pilot_longer_than_the_run_is_said_as_the_whole_run_with_the_length_a_rise_needs():
    """n = 12 (z sigma / delta)^2 past a 20-step run: the plan is the whole run, and says how many steps a rise would
    need, not "max_steps: 20 (... more than the run's own 20 steps)" (audit s37c)."""
    setup = read_run_config({"learning_rate": 1e-6, "num_generations": 4, "per_device_train_batch_size": 4,
                             "max_steps": 20})
    plan = config_headline(config_forecast(setup)).pilot_plan
    assert plan["steps"] == 20 and plan["setting"] == "max_steps: 20"
    needed = int(plan["why"].split("seeing a rise needs ")[1].split(" ")[0])
    assert plan["why"].startswith("the whole run: seeing a rise needs") and needed > 20


@pytest.mark.parametrize("amplitude, verdict", [(0.1, "at risk"), (0.06, "unsure")])
def test_a_swing_is_a_risk_only_as_surely_as_diagnose_reports_one(tmp_path, capsys, amplitude, verdict):
    """A pilot whose rows alternate (a limit cycle of two rows): at risk, with the lr lowered, where the swing's
    confidence reaches SWING_SURE; under it the verdict is unsure, naming the swing and its confidence (audit s38 D2:
    a 0.55 swing on 25-40 rows of a run that held 300 steps made "at risk" at some pilot lengths and not others)."""
    from gspo_dynamics.cli.main import main

    rng = np.random.default_rng(0)
    t = np.arange(1, 41)
    (tmp_path / "p.csv").write_text("step,reward\n" + "".join(
        f"{i},{x}\n" for i, x in zip(t, 0.38 + amplitude * (-1.0) ** t + 0.05 * rng.standard_normal(t.size))))
    (tmp_path / "c.yaml").write_text("learning_rate: 1.0e-5\nper_device_train_batch_size: 4\ngradient_accumulation_steps: 2\n"
                                     "num_generations: 4\nbeta: 0.05\nmax_completion_length: 512\nmax_steps: 300\n")
    assert main(["predict", "--config", str(tmp_path / "c.yaml"), "--pilot", str(tmp_path / "p.csv"),
                 "--pilot-steps", "40", "--run-steps", "300"]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first.startswith(f"verdict: {verdict} (") and "alternates from one logged row to the next" in first
    if verdict == "unsure":
        c = float(first.split("at confidence ")[1].split(",")[0])
        assert _swing.SWING_REPORTED <= c < _swing.SWING_SURE
        assert f"under the {_swing.SWING_SURE:g} a risk needs" in first and second == "to tell: a longer pilot (--pilot-steps)"


def test_a_swing_is_sure_at_the_confidence_diagnose_checked_on_real_runs():
    from gspo_dynamics.diagnose._verdict import CHECKED_CONFIDENCE

    assert _swing.SWING_SURE == CHECKED_CONFIDENCE


def _verl_script(tmp_path, batch: int, mini: int, epochs: int, n: int):
    path = tmp_path / "run.sh"
    path.write_text(f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size={batch} "
                    f"actor_rollout_ref.actor.ppo_mini_batch_size={mini} actor_rollout_ref.actor.ppo_epochs={epochs} "
                    f"actor_rollout_ref.rollout.n={n} actor_rollout_ref.actor.optim.lr=1e-6 "
                    "trainer.total_training_steps=100000\n")
    return path


@pytest.mark.parametrize("batch, mini, epochs, n", [(128, 32, 3, 8), (4, 4, 1, 2), (8, 2, 1, 4)])
def test_verls_pilot_is_planned_in_trainer_steps(tmp_path, batch, mini, epochs, n):
    """verl's trainer.total_training_steps counts rollouts, each T = ppo_epochs batch / mini optimizer steps logging
    the rollout's batch x n responses (audit s39c: 48 was advised for 4 rollouts of T = 12): the plan is in trainer
    steps, sized by (1) on the rollout's responses (recomputed here from the script's numbers), at least the 4
    refresh periods (a trainer step each) and the 8 logged steps a pilot forecast needs."""
    from gspo_dynamics.predict._headline import PILOT_RISE, POWER_Z

    head = config_headline(config_forecast(read_run_config(_verl_script(tmp_path, batch, mini, epochs, n))))
    sigma = 1.0 / (2.0 * math.sqrt(batch * n))
    expected = max(math.ceil(12.0 * (POWER_Z * sigma / PILOT_RISE) ** 2), 4, 8)
    assert head.pilot_plan["setting"] == f"trainer.total_training_steps={expected}", head.pilot_plan
    assert "per trainer step" in head.pilot_plan["why"]


def test_dapos_dynamic_sampling_turns_the_zero_std_cost_into_generation(tmp_path):
    """With algorithm.filter_groups.enable (DAPO's dynamic sampling) zero-std groups are dropped and more drawn: the
    zero-std line says so, not that they dilute steps (audit s39c 8: the two lines contradicted)."""
    path = _verl_script(tmp_path, 128, 32, 1, 8)
    plain = [s for s in config_headline(config_forecast(read_run_config(path))).settled if s.startswith("zero-std")]
    path.write_text(path.read_text().rstrip("\n") + " algorithm.filter_groups.enable=True\n")
    dapo = [s for s in config_headline(config_forecast(read_run_config(path))).settled if s.startswith("zero-std")]
    assert len(plain) == len(dapo) == 1 and "cost generation, not diluted steps" in dapo[0]
    assert "filter_groups" not in plain[0]


@pytest.mark.parametrize("warmup", [10, 80])
def test_a_pilot_is_planned_past_the_lr_warm_up(warmup):
    """(1) sizes a pilot at the run's lr, so the plan adds the warm-up's steps (audit s39c 6: max_steps 4 was advised
    inside a 10-step warm-up, a pilot that never reaches the lr the run trains at)."""
    trl = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8, "max_steps": 1000,
           "lr_scheduler_type": "constant_with_warmup"}  # a schedule a shorter max_steps leaves as it is
    plan = config_headline(config_forecast(read_run_config(trl, devices=1))).pilot_plan
    warm = config_headline(config_forecast(read_run_config(trl | {"warmup_steps": warmup}, devices=1))).pilot_plan
    assert warm["steps"] == plan["steps"] + warmup and warm["setting"] == f"max_steps: {plan['steps'] + warmup}"
    assert warm["why"].startswith(f"{warmup} warm-up steps, then {plan['steps']} at the run's lr")


@pytest.mark.parametrize("extra, said", [({}, "decay"), ({"warmup_ratio": 0.1, "lr_scheduler_type": "constant_with_warmup"},
                                                     "warm-up (a share of it)")])
def test_a_pilot_of_a_schedule_that_follows_the_run_length_is_the_run_stopped_not_a_shorter_run(extra, said):
    """Audit s43c D1: "max_steps: 143 (100 warm-up steps, then 43 at the run's lr)" under warmup_ratio 0.1: a run of
    143 steps warms up over ceil(14.3) = 15 steps (transformers' get_warmup_steps) and, under TRL's default linear
    schedule, decays to 0 by step 143, so it never runs at the lr the plan sized it for. The plan is the run as
    configured, stopped after n steps; the length key stays."""
    trl = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8, "max_steps": 1000} | extra
    setup = read_run_config(trl, devices=1)
    assert setup.schedule.follows_length
    plan = config_headline(config_forecast(setup)).pilot_plan
    assert plan["setting"].startswith(f"the run as configured, stopped after step {plan['steps']} (keep max_steps")
    assert said in plan["setting"] and f"max_steps: {plan['steps']}" not in plan["setting"]
    shorter = read_run_config(trl | {"max_steps": plan["steps"]}, devices=1).schedule  # what the old advice ran
    assert shorter.warmup != setup.schedule.warmup or shorter.total != setup.schedule.total


def test_a_ragged_verl_rollout_counts_its_own_responses(tmp_path):
    """A mini-batch that does not divide the rollout rounds T, not the rollout: 100 prompts x 8 are 800 responses
    (review s39: 768 from the rounded T)."""
    head = config_headline(config_forecast(read_run_config(_verl_script(tmp_path, 100, 32, 1, 8))))
    assert "at 800 responses per rollout" in head.pilot_plan["why"]


def test_a_decay_over_an_unknown_length_is_said_in_the_first_lines():
    """Audit s43c D6: TRL's default linear decay with max_steps -1 said only "max_steps -1 (the run's length unknown)"
    first; that every number then reads the peak lr was under --explain alone. It is said with the length."""
    trl = {"learning_rate": 1e-6, "num_generations": 8, "per_device_train_batch_size": 8}
    brief = read_run_config(trl, devices=1).brief_lines()
    line = next(line for line in brief if line.startswith("assumed, not in the config"))
    assert "max_steps -1 (the run's length unknown: the lr schedule's decay over it is not read" in line
    constant = read_run_config(trl | {"lr_scheduler_type": "constant"}, devices=1).brief_lines()
    assert not any("decay over it" in line for line in constant)


@pytest.mark.parametrize("extra, key, value", [
    ({"per_device_train_batch_size": 1}, "per_device_train_batch_size", 6),
    ({"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}, "per_device_train_batch_size", 6),
    ({"per_device_train_batch_size": 4, "generation_batch_size": 8}, "generation_batch_size", 12),
])
def test_a_config_trl_refuses_gets_the_edit_that_makes_it_start_not_change_none(extra, key, value):
    """Audit s43u D1: "TRL refuses this config ... 1 is not a multiple of num_generations 6" then "change: none" (the
    README's Llama run). The least edit that makes TRL's generation batch whole groups of G (its __post_init__ check,
    recomputed here) comes first among the changes."""
    cfg = {"learning_rate": 5e-6, "num_generations": 6, "max_steps": 100} | extra
    setup = read_run_config(cfg, devices=1)
    assert any(line.startswith("TRL refuses this config") for line in setup.brief_lines())
    head = config_headline(config_forecast(setup))
    assert head.changes[0].key == key and head.changes[0].value == value
    fixed = read_run_config(cfg | {key: value}, devices=1)
    assert not any(line.startswith("TRL refuses this config") for line in fixed.brief_lines())
    assert not config_headline(config_forecast(fixed)).changes


def test_a_group_of_two_gets_a_larger_group_from_the_config_alone():
    """Audit s43u D1: "zero-std groups at num_generations 2: at least 0.5" beside "change: none". p^G + (1 - p)^G is
    least at p = 1/2 (recomputed by hand over a grid of p), so at G = 2 at least half of the groups carry no signal
    whatever the prompts: G goes to the least G whose floor is at most 0.3, T kept; at G = 4 nothing is said."""
    from gspo_dynamics.predict._headline import FLOOR_TARGET

    p = np.linspace(0.0, 1.0, 1001)
    floor = lambda G: float(np.min(p ** G + (1 - p) ** G))  # noqa: E731
    new = next(G for G in range(3, 64) if floor(G) <= FLOOR_TARGET + 1e-12)
    cfg = {"learning_rate": 1e-5, "num_generations": 2, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
           "max_steps": 100, "lr_scheduler_type": "constant"}
    setup = read_run_config(cfg, devices=1)
    changes = {c.key: c.value for c in config_headline(config_forecast(setup)).changes}
    assert changes["num_generations"] == new == 3 and floor(2) == pytest.approx(0.5)
    edited = read_run_config(cfg | changes, devices=1)
    assert edited.hparams.refresh_interval == setup.hparams.refresh_interval  # T kept
    assert not config_headline(config_forecast(read_run_config(cfg | {"num_generations": 4}, devices=1))).changes
