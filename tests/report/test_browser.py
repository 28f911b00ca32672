"""The report in a real browser (Debian's `chromium`, headless; skipped, saying so, where none is installed): the page
loads with no console error and no network request (the browser's proxy points at a closed port, and its network
log holds no request a blank page does not make), its DOM holds every section, and a screenshot of the whole page
shows each section (the section's part of the image is not blank).

Every check is first shown to catch what it looks for, on a control page that logs a console error and asks for an
image over the network. About 10 s (four browser starts): slow.
"""

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from gspo_dynamics.logs import read_log
from gspo_dynamics.report import build_report, to_html

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(BROWSER is None, reason="no headless browser installed (apt-get "
                                                                           "install -y chromium): the page is not "
                                                                           "checked in a browser")]
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
         "--disable-extensions", "--enable-logging=stderr", "--v=0")
WIDTH = 1300
INK = 0.5  # a pixel this much darker than white (any channel, 0-1) is ink
MIN_INK = 0.002  # a section's part of the screenshot with less ink than this share is blank
# the test copy of the page, only: each section's box in page coordinates, and the page's height, into the DOM
PROBE = ('<script>document.body.setAttribute("data-rects", JSON.stringify([...document.querySelectorAll("section")]'
         '.map(e => {const r = e.getBoundingClientRect(); return [e.id, r.top + scrollY, r.bottom + scrollY];})'
         '.concat([["page", 0, document.documentElement.scrollHeight]])));</script></body>')
CONTROL = '<html><body><img src="http://198.51.100.7/x.png"><script>console.error("boom")</script></body></html>'


def browse(page: Path, tmp: Path, *extra: str) -> tuple[str, str, set[str]]:
    """(stdout, stderr, the http(s) URLs requested, without their queries) of one headless load of `page`."""
    net = tmp / f"{page.stem}.netlog.json"
    run = subprocess.run([BROWSER, *FLAGS, f"--log-net-log={net}", *extra, page.as_uri()], capture_output=True,
                         text=True, timeout=60)
    text = net.read_text(errors="replace") if net.exists() else ""
    urls = {f"{u.scheme}://{u.netloc}{u.path}" for u in map(urlsplit, re.findall(r'"url":"(https?://[^"]*)"', text))}
    return run.stdout, run.stderr, urls


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    from _report_logs import saturating_rows, write_jsonl

    tmp = tmp_path_factory.mktemp("browser")
    logs = [read_log(write_jsonl(tmp / f"{name}.jsonl", saturating_rows(n=150, seed=seed)))
            for seed, name in enumerate(("base", "other"))]
    report = build_report(logs, gpus=2, rate=3.0)
    page = tmp / "report.html"
    page.write_text(to_html(report), encoding="utf-8")
    (tmp / "probe.html").write_text(page.read_text().replace("</body>", PROBE), encoding="utf-8")
    (tmp / "control.html").write_text(CONTROL, encoding="utf-8")
    (tmp / "blank.html").write_text("<html><body></body></html>", encoding="utf-8")
    return tmp, report


def test_the_page_loads_without_errors_or_network(pages):
    tmp, report = pages
    _, _, browser_own = browse(tmp / "blank.html", tmp, "--dump-dom")
    _, control_err, control_urls = browse(tmp / "control.html", tmp, "--dump-dom")
    assert console_errors(control_err) and "http://198.51.100.7/x.png" in control_urls - browser_own  # the checks work
    dom, err, urls = browse(tmp / "report.html", tmp, "--dump-dom")
    assert console_errors(err) == []
    assert urls - browser_own == set()
    found = re.findall(r'<section id="([^"]+)"', dom)
    assert found == [s.id for s in report.sections]
    assert all(html.escape(line, quote=False) in dom for s in report.sections for line in s.lines)


def test_a_screenshot_shows_each_section(pages):
    import matplotlib.image

    tmp, report = pages
    dom, _, _ = browse(tmp / "probe.html", tmp, f"--window-size={WIDTH},900", "--dump-dom")
    rects = json.loads(html.unescape(re.search(r'data-rects="([^"]*)"', dom).group(1)))
    height = int(rects[-1][2])
    shot = tmp / "shot.png"
    browse(tmp / "report.html", tmp, f"--window-size={WIDTH},{height}", f"--screenshot={shot}")
    image = matplotlib.image.imread(shot)[..., :3]  # (H, W, 3) in [0, 1]
    assert image.shape[0] >= height - 1
    ink = (1.0 - image).max(axis=2) > INK  # (H, W)
    shares = {name: float(ink[int(top):int(bottom)].mean()) for name, top, bottom in rects[:-1]}
    assert list(shares) == [s.id for s in report.sections]
    assert all(share > MIN_INK for share in shares.values()), shares
    assert np.mean(ink) < 0.5  # ink on paper, not a failed black render
