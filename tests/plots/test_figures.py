"""The figure registry and `gspo-dynamics figures`, end to end on the cheapest figure."""

import json

import pytest

from gspo_dynamics.plots import build as building
from gspo_dynamics.plots import registry as figures
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.cli.main import main

EXPECTED = ("stability", "trajectories", "slow_start", "group_size", "zero_variance", "ratios", "moe_churn", "predict_map",
            "predict_pilot_map")


def test_registry_holds_the_issue_figures_in_order():
    assert tuple(figures.FIGURES)[: len(EXPECTED)] == EXPECTED
    diagnose = [n for n in figures.FIGURES if n.startswith("diagnose_")]
    assert list(figures.FIGURES)[len(EXPECTED):] == diagnose  # diagnose panels come last
    for spec in figures.FIGURES.values():
        assert spec.title and len(spec.caption) > 80


def test_readme_lists_every_figure_with_its_commands():
    text = building.readme({"stability": {"mode": "quick", "seconds": 3.0, "files": []}})
    for name, spec in figures.FIGURES.items():
        assert f"## {spec.title}" in text and f"({name}.png)" in text
        assert f"`gspo-dynamics figures --only {name}`" in text and f"`gspo-dynamics figures --only {name} --quick`" in text
    assert "made in **quick** mode" in text and "Not generated yet." in text


def test_unknown_figure_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown figure 'nope'; expected one of stability"):
        building.build(["nope"], out=tmp_path)


def test_cli_builds_one_figure_png_pdf_manifest_readme(tmp_path, capsys):
    assert main(["figures", "--quick", "--only", "zero_variance", "--out", str(tmp_path)]) == 0
    assert "wrote 1 figure(s)" in capsys.readouterr().out
    png, pdf = tmp_path / "zero_variance.png", tmp_path / "zero_variance.pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["zero_variance"]["mode"] == "quick"
    readme = (tmp_path / "README.md").read_text()
    assert "made in **quick** mode" in readme
    # only what the folder holds: no entry, and no link, for a figure not built here
    assert "Not generated yet." not in readme and "stability.png" not in readme


def test_cli_list_and_bad_name(capsys):
    assert main(["figures", "--list"]) == 0
    assert "stability" in capsys.readouterr().out
    assert main(["figures", "--only", "nope"]) == 2
    assert capsys.readouterr().err.startswith("gspo-dynamics: error: unknown figure 'nope'")


def test_a_real_log_figure_is_skipped_with_a_note_when_the_real_logs_are_absent(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GSPO_DYNAMICS_REAL_LOGS", str(tmp_path / "absent"))
    assert main(["figures", "--only", "diagnose_unsloth", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "wrote 0 figure(s)" in out and "skipped diagnose_unsloth: GSPO_DYNAMICS_REAL_LOGS=" in out
    assert not (tmp_path / "diagnose_unsloth.png").exists()
    assert "diagnose_unsloth" not in json.loads((tmp_path / "manifest.json").read_text())


@pytest.mark.real_logs
def test_a_real_log_figure_is_drawn_from_the_shared_folder(tmp_path, capsys):
    assert main(["figures", "--only", "diagnose_unsloth", "--out", str(tmp_path)]) == 0
    assert "wrote 1 figure(s)" in capsys.readouterr().out
    assert (tmp_path / "diagnose_unsloth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_pilot_map_is_drawn_over_lr_and_T_from_a_fresh_pilot():
    """predict_pilot_map trains the README's 40-step pilot and draws `predict --plot`'s two panels: the (lr, T) map
    with the collapse model's hatched risk, the withheld linear map's reason and the config's point (lr 1e-3, T = 2),
    and the pilot's curve; drawn, the legend with the notes lies below the map, not on it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = figures.FIGURES["predict_pilot_map"].make(True)
    lr_map, curve = fig.axes
    assert lr_map.get_xlabel() == "learning rate (config key lr)"  # our trainer's key
    assert lr_map.get_ylabel().replace("\n", " ") == "optimizer steps per rollout T (steps_per_generation x num_iterations)"
    point = [line for line in lr_map.get_lines() if line.get_label().startswith("this config")]
    assert len(point) == 1 and tuple(point[0].get_xydata()[0]) == (1e-3, 2.0)
    assert any(list(getattr(c, "hatches", None) or []) == ["///"] for c in lr_map.collections)  # the collapse risk
    labels = [t.get_text().replace("\n", " ") for t in lr_map.get_legend().get_texts()]
    assert any(label.startswith("collapse risk (hatched)") for label in labels)
    assert any(label.startswith("linear map withheld: the pilot does not identify the stiffness") for label in labels)
    FigureCanvasAgg(fig).draw()
    assert lr_map.get_legend().get_window_extent().y1 < lr_map.get_window_extent().y0
    assert curve.get_xlabel() == "step" and any(line.get_label() == "pilot" for line in curve.get_lines())
