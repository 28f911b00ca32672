"""Every real log diagnose reads, report reads (../shared/data/real_logs, other people's runs, never shipped): the
page parses with every section and its answer is diagnose's; the DPO-family log is one line and exit 2."""

import pytest
from _real_logs import ALL, DPO, IMJONEZZ, SRINATH
from test_report import RUN_SECTIONS, SWEEP_SECTIONS, parse

from gspo_dynamics.cli.main import main
from gspo_dynamics.logs import read_log
from gspo_dynamics.report import build_report, to_html

READ = tuple(name for name in ALL if name != DPO)


@pytest.mark.parametrize("name", READ)
def test_each_real_log_reports(real_logs, name):
    log = read_log(real_logs / name)
    report = build_report([log], gpus=1)
    page = parse(to_html(report))
    assert page.errors == [] and tuple(page.sections) == RUN_SECTIONS
    assert report.answer == tuple(report.runs[0].diagnosis.headline()[:2])  # a fresh diagnose's: test_report.py


def test_a_sweep_of_real_logs(real_logs):
    report = build_report([read_log(real_logs / IMJONEZZ), read_log(real_logs / SRINATH)])
    assert tuple(parse(to_html(report)).sections) == SWEEP_SECTIONS
    names = [row[0] for row in report.section("verdict").tables[0].rows]
    assert len(set(names)) == 2 and all(n in f for n, f in zip(names, (IMJONEZZ, SRINATH)))
    assert [row[0] for row in report.section("part-ways").tables[0].rows] == names[1:]


def test_a_dpo_log_is_refused_in_one_line(real_logs, tmp_path, capsys):
    assert main(["report", str(real_logs / DPO), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "not of GRPO/GSPO-style RL" in err and err.count("\n") == 1
