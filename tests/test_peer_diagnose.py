"""The mapping and scoring of paper_repro/peer_diagnose.py on made-up peer outputs (no peer needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PAPER_REPRO = Path(__file__).parents[1] / "paper_repro"
sys.path.insert(0, str(PAPER_REPRO))
import peer_diagnose as pd  # noqa: E402

from gspo_dynamics.diagnose import MODES  # noqa: E402


@pytest.mark.parametrize("name", sorted(pd.MAPPING))
def test_every_mapping_entry_names_one_of_our_modes_and_findings(name):
    mode, finding = pd.MAPPING[name]
    assert mode in MODES
    assert finding is None or finding in pd.FINDINGS


def test_a_silent_peer_reads_healthy():
    assert pd.peer_primary(pd.peer_items({"report": [], "live": []})) == pd.HEALTHY


def test_the_most_severe_item_is_the_verdict_and_ties_keep_the_peers_order():
    result = {"report": [["mode_collapse_entropy", "high"], ["instability_hotspot", "high"],
                         ["grpo_length_drift", "medium"]]}
    assert pd.peer_primary(pd.peer_items(result)) == "policy_concentration"
    swapped = {"report": [result["report"][1], result["report"][0], result["report"][2]]}
    assert pd.peer_primary(pd.peer_items(swapped)) == "dynamical_instability"


def test_a_critical_failure_comes_before_the_report():
    result = {"report": [["mode_collapse_entropy", "high"]], "critical": "Inf detected in grpo_loss"}
    items = pd.peer_items(result)
    assert items[0] == ("critical:non_finite", "critical")
    assert pd.peer_primary(items) == "dynamical_instability"
    assert pd.critical_name("Loss grpo_loss=250.0 exceeds safe threshold (100)") == "critical:loss"
    assert pd.critical_name(None) is None


@pytest.mark.parametrize("label", MODES)
def test_an_alert_with_no_mode_at_the_head_is_wrong_for_every_label(label):
    verdict = pd.peer_primary(pd.peer_items({"report": [["kl_above_target", "medium"], ["grpo_length_drift", "low"]]}))
    assert verdict == pd.UNMAPPED
    assert not pd.is_right(label, verdict) and not pd.is_right(label, verdict, merged=True)


def test_merging_joins_only_still_rising_and_healthy():
    assert pd.is_right("still_rising", "healthy_saturation", merged=True)
    assert pd.is_right("healthy_saturation", "still_rising", merged=True)
    assert not pd.is_right("still_rising", "healthy_saturation")
    assert not pd.is_right("stalled", "noise_dominated", merged=True)


def test_findings_come_from_every_output_and_unknown_names_add_none():
    result = {"report": [["grpo_kl_divergence", "high"], ["policy_drift_warn", "medium"]],
              "live": [["gradient_explosion", "high", 40], ["no_such_rule", "high", 50]],
              "critical": "NaN detected in loss"}
    assert pd.peer_findings(result) == {"kl_spike", "grad_norm_spike", "non_finite"}
    assert pd.peer_findings({"report": [], "live": []}) == set()


def _row(label, ours, peer, n_items=1):
    return {"label": label, "ours": ours, "peer": peer, "peer_items": n_items}


def test_mode_scores_count_both_tools_by_the_same_rule():
    rows = [_row("healthy_saturation", "healthy_saturation", pd.HEALTHY, 0),
            _row("still_rising", "still_rising", pd.HEALTHY, 0),
            _row("stalled", "noise_dominated", pd.UNMAPPED),
            _row("policy_concentration", "policy_concentration", "policy_concentration")]
    s = pd.mode_scores(rows)
    assert (s["n"], s["ours"], s["peer"]) == (4, 3, 2)
    assert (s["ours_merged"], s["peer_merged"]) == (3, 3)
    assert (s["peer_unmapped"], s["peer_silent"]) == (1, 2)
    assert s["ours_merged"] >= s["ours"] and s["peer_merged"] >= s["peer"]  # merging only adds


def test_finding_scores_split_detections_from_false_alarms():
    rows = [{"label": "kl_spike", "ours_findings": {"kl_spike"}, "peer_findings": {"kl_spike"}},
            {"label": "kl_spike", "ours_findings": set(), "peer_findings": {"kl_spike"}},
            {"label": pd.CLEAN, "ours_findings": set(), "peer_findings": {"kl_spike"}},
            {"label": "still_rising", "ours_findings": {"kl_spike"}, "peer_findings": set()},
            {"label": "non_finite", "ours_findings": {"kl_spike"}, "peer_findings": {"kl_spike"}}]
    s = pd.finding_scores(rows, "kl_spike")
    assert (s["n"], s["ours"], s["peer"]) == (2, 1, 2)
    assert (s["clean"], s["ours_false"], s["peer_false"]) == (2, 1, 1)  # another finding's log is neither


def test_a_trainer_state_goes_to_the_peer_untouched(tmp_path):
    rows = [{"reward": 0.1 * i, "reward_std": 0.3, "grad_norm": 1.0, "step": i} for i in range(1, 31)]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": rows}))
    assert pd.trl_rows(str(path)) == rows


def test_another_format_is_written_back_under_trl_keys(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [{"step": i, "data": {"critic/score/mean": 0.01 * i, "actor/kl_loss": 0.001 * i, "actor/entropy": 1.0}}
             for i in range(1, 31)]
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    rows = pd.trl_rows(str(path))
    assert [r["step"] for r in rows] == list(range(1, 31))
    assert rows[4]["reward"] == pytest.approx(0.05) and rows[4]["kl"] == pytest.approx(0.005)
    assert rows[4]["entropy"] == 1.0


def test_without_a_peer_the_script_says_so_and_skips(tmp_path):
    env = {**os.environ, "GSPO_DYNAMICS_PEER_CACHE": str(tmp_path / "no_peers")}
    proc = subprocess.run([sys.executable, str(PAPER_REPRO / "peer_diagnose.py"), "--no-record", "--no-install", "--peer",
                           str(tmp_path / "absent")], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "[SKIP] diagnose-vs-peer" in proc.stdout


# the registry peers (issue 50 item 6): peer_tools.json's mapping and _peer_registry's scoring
import _peer_registry as reg  # noqa: E402

CFG = reg.config()


@pytest.mark.parametrize("peer", sorted(CFG["peers"]))
def test_every_registry_mapping_entry_names_our_modes_and_findings_or_none(peer):
    for name, (mode, finding) in CFG["peers"][peer]["map"].items():
        assert mode is None or mode in MODES, (peer, name)
        assert finding is None or finding in pd.FINDINGS, (peer, name)


def test_a_registry_peers_passed_checks_are_dropped_and_its_worst_output_heads():
    result = {"items": [["plateau", "ok"], ["entropy_collapse", "warning"], ["advantage_collapse", "critical"],
                        ["kl_drift", "skipped"]]}
    found = reg.items(result, CFG)
    assert found == [("advantage_collapse", "critical"), ("entropy_collapse", "warning")]
    mapping = CFG["peers"]["rldoctor"]["map"]
    assert reg.primary(found, mapping) == "advantage_degeneracy"
    assert reg.primary(reg.items({"items": [["plateau", "ok"]]}, CFG), mapping) == reg.HEALTHY
    assert reg.primary([("lr_schedule", "warning")], CFG["peers"]["trainspotter"]["map"]) == reg.UNMAPPED
    assert reg.findings([("length_pathology", "critical"), ("kl_drift", "info")], mapping) == {"truncation", "kl_spike"}


def test_registry_targets_and_false_alarms_count_every_tool_alike():
    families = {"trl": [("healthy_saturation", "a"), ("stalled", "b")], "findings": [("healthy", "c"), ("kl_spike", "d")]}
    ours = {"trl": [{"verdict": "healthy_saturation", "findings": set(), "warned": set()},
                    {"verdict": "noise_dominated", "findings": set(), "warned": set()}],
            "findings": [{"verdict": "still_rising", "findings": set(), "warned": set()},
                         {"verdict": "healthy_saturation", "findings": {"kl_spike"}, "warned": {"kl_spike"}}]}
    peer = {"trl": [{"label": "healthy_saturation", "verdict": "healthy_saturation", "findings": set(), "head": "-",
                     "error": None},
                    {"label": "stalled", "verdict": "stalled", "findings": set(), "head": "plateau", "error": None}],
            "findings": [{"label": "healthy", "verdict": "stalled", "findings": set(), "head": "plateau", "error": None},
                         {"label": "kl_spike", "verdict": "x", "findings": set(), "head": "kl_drift", "error": None}]}
    fam = reg.family_counts(families, ours, {"p": peer})
    assert fam == {"trl": {"n": 2, "ours": 1, "p": 2}}
    fnd = reg.finding_counts(families, ours, {"p": peer}, ("kl_spike", "truncation"))
    assert fnd == {"kl_spike": {"n": 1, "ours": 1, "p": 0}}
    alarms = reg.false_alarms(families, ours, {"p": peer})
    assert alarms == {"n": 2, "ours": 0, "p": 1}
    assert reg.targets(fam, fnd, alarms, ["p"]) == ["trl: ours 1 < p 2 of 2"]
