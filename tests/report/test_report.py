"""The report (report.build_report, to_html, to_markdown, `gspo-dynamics report`): the page parses and holds every
section, it loads nothing from elsewhere, the markdown says the same facts, the verdict is diagnose's own, a sweep
has its table and its partings, and bad input is one line with exit status 2."""

import re
from html import escape, unescape
from html.parser import HTMLParser

import pytest
from _trl_logs import kl_log_without_beta

from gspo_dynamics.cli.main import main
from gspo_dynamics.diagnose import diagnose
from gspo_dynamics.logs import read_log
from gspo_dynamics.report import build_report, to_html, to_markdown

RUN_SECTIONS = ("verdict", "curves", "forecast", "compute")
SWEEP_SECTIONS = ("verdict", "part-ways", "curves", "forecast", "compute")
VOID = {"meta", "br", "img", "input", "link", "hr"}


class Page(HTMLParser):
    """Well-formedness (every element closed in order) and what the page holds: section ids, the svg count, any
    attribute that would load something (src, href, url(...))."""

    def __init__(self):
        super().__init__()
        self.stack, self.sections, self.svgs, self.loads, self.errors = [], [], 0, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.sections.append(attrs.get("id"))
        self.svgs += tag == "svg"
        self.loads += [v for k, v in attrs.items() if k in ("src", "href") or "url(" in (v or "")]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.loads += [v for k, v in dict(attrs).items() if k in ("src", "href")]

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


def facts(report):
    """Every line and table cell of the report: what both pages must say."""
    for s in report.sections:
        yield from s.lines
        yield from (cell for t in s.tables for row in (t.headers, *t.rows) for cell in row)


def test_one_run_page_parses_and_holds_every_section(run_file):
    report = build_report([read_log(run_file(n=150))], gpus=2, rate=3.0)
    html = to_html(report)
    page = parse(html)
    assert page.errors == [] and page.stack == []
    assert tuple(page.sections) == RUN_SECTIONS
    assert page.svgs == 7  # reward, entropy, length, truncation, KL, grad norm, zero-std (no clip logged)
    assert page.loads == [] and "<script" not in html and not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html)


def test_the_markdown_says_the_same_facts(run_file):
    report = build_report([read_log(run_file("a.jsonl", n=150)), read_log(run_file("b.jsonl", n=150, seed=1))])
    html, md = unescape(to_html(report)), to_markdown(report)
    missing = [f for f in facts(report) if f not in html or f.replace("|", "\\|") not in md]
    assert missing == []
    assert all(line in md and line in html for line in report.answer)
    assert [h[3:] for h in md.splitlines() if h.startswith("## ")] == [s.title for s in report.sections]


def test_the_verdict_is_diagnoses_own(run_file):
    log = read_log(run_file(n=150))
    report = build_report([log])
    d = diagnose(log)
    assert report.answer == tuple(d.headline()[:2])
    assert report.section("verdict").lines[:2] == tuple(d.headline()[:2])
    assert report.runs[0].diagnosis.primary == d.primary


def test_a_sweep_has_its_table_and_where_the_runs_part(run_file):
    paths = [run_file("base.jsonl", n=200), run_file("same.jsonl", n=200, seed=1),
             run_file("moved.jsonl", n=200, seed=2, shift_at=120, shift=0.2)]
    report = build_report([read_log(p) for p in paths])
    assert tuple(s.id for s in report.sections) == SWEEP_SECTIONS
    table = report.section("verdict").tables[0]
    assert [row[0] for row in table.rows] == ["base.jsonl", "same.jsonl", "moved.jsonl"]
    parted = dict(report.partings)
    assert not any(p.parts and p.metric == "reward" for p in parted["same.jsonl"])
    first = next(p for p in parted["moved.jsonl"] if p.parts)
    assert first.metric == "reward" and 120 <= first.step <= 120 + first.window
    assert "moved.jsonl at step" in report.answer[1]
    assert parse(to_html(report)).sections == list(SWEEP_SECTIONS)


def test_runs_that_do_not_part_say_so(run_file):
    path = run_file(n=120)
    report = build_report([read_log(path), read_log(path)])
    assert "do not part ways" in report.answer[1]
    assert any("do not part ways" in line for line in report.section("part-ways").lines)


def test_absent_curves_are_named(run_file):
    report = build_report([read_log(run_file(n=120, entropy=False))])
    assert "absent from the log: entropy (nats), clip fraction" in report.section("curves").lines


def test_the_command_writes_both_pages_and_answers_first(run_file, tmp_path, capsys):
    out, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", run_file(n=150), "--out", str(out), "--markdown", str(md), "--gpus", "4",
                 "--gpu-hour-rate", "2.99"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("verdict") and printed[-1] == f"wrote {out} and {md}"
    assert "GPU-hours" in md.read_text() and escape("$") in out.read_text()


@pytest.mark.parametrize("argv, says", [
    (["--gpu-hour-rate", "2"], "give the GPUs the run used too (--gpus N)"),
    (["--gpus", "0"], "--gpus must be a whole number >= 1"),
    (["--out", "/no/such/folder/r.html"], "its folder does not exist"),
    (["--pilot-steps", "20"], "give the run's config (--config)"),
])
def test_bad_flags_are_one_line(run_file, tmp_path, capsys, argv, says):
    assert main(["report", run_file(n=60), "--out", str(tmp_path / "r.html"), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_unreadable_log_is_named(run_file, tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("nothing to read here\n")
    assert main(["report", run_file(n=60), str(bad), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gspo-dynamics: error: {bad}: ") and err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


def test_a_sweeps_compute_is_the_sum_of_its_runs(run_file):
    runs = [read_log(run_file(f"r{k}.jsonl", n=100, seed=k, step_time=2.0 + k)) for k in range(3)]
    report = build_report(runs, gpus=4, rate=2.0)
    accounts = [r.accounting for r in report.runs]
    gpu_hours = sum(4 * 100 * (2.0 + k) / 3600 for k in range(3))  # 100 rows of 1 step each at 2, 3, 4 s per step
    lo = sum(a.total[0] * a.gpu_hours for a in accounts)
    assert sum(a.gpu_hours for a in accounts) == pytest.approx(gpu_hours)
    first = report.section("compute").lines[0]
    assert first.startswith(f"the sweep: {gpu_hours:.3g} GPU-hours logged over 3 of 3 runs, {lo:.3g}")
    assert f"(${lo * 2.0:,.2f}-" in first


def test_runs_too_short_to_compare_are_not_said_to_stay_together(run_file):
    report = build_report([read_log(run_file("short.jsonl", n=10)), read_log(run_file("long.jsonl", n=100))])
    row = report.section("part-ways").tables[0].rows[0]
    assert row[1].startswith("not compared (10 common rows") and "not compared" in report.answer[1]


def test_a_folder_of_run_folders_is_reported_as_a_sweep_and_diagnose_says_which_to_pick(run_file, tmp_path, capsys):
    """sweep/a/metrics.jsonl, sweep/b/metrics.jsonl and sweep/c/ without a log: report reads a and b, by name, and
    says c held none; diagnose of the folder is one error naming its runs."""
    import shutil

    sweep = tmp_path / "sweep"
    for name, n in (("a", 150), ("b", 90)):
        (sweep / name).mkdir(parents=True)
        shutil.copy(run_file(f"{name}.jsonl", n=n), sweep / name / "metrics.jsonl")
    (sweep / "c").mkdir()
    (sweep / "c" / "notes.txt").write_text("no log here\n")
    out = tmp_path / "r.html"
    assert main(["report", str(sweep), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.rstrip().endswith(f"of the 2 runs of {sweep} (a, b; no log read in c: give its file)")
    assert "2 runs" in printed and parse(out.read_text()).errors == []
    assert main(["diagnose", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert f"holds 2 run folders (a/, b/), not one run's log: diagnose reads one of them ('{sweep / 'a'}')" in err


def test_the_report_reads_beta_and_devices_as_diagnose_does(tmp_path, capsys):
    """A TRL config without beta beside a TRL log dated before 0.18 that logs a KL: each run's diagnosis reads beta
    0.04 (`predict.beta_from_logged_kl`), said in its config lines; --devices reaches the config as diagnose's."""
    log, config = kl_log_without_beta(tmp_path, max_steps=500)
    md = tmp_path / "r.md"
    assert main(["report", str(log), "--config", str(config), "--devices", "2", "--out", str(tmp_path / "r.html"),
                 "--markdown", str(md)]) == 0
    capsys.readouterr()
    page = md.read_text()
    assert "beta 0.04 (the log holds a KL, and its keys date it before TRL 0.18" in page and "processes 1" not in page
