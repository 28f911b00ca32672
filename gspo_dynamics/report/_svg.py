"""Line charts as inline SVG text: the report's page draws them with no script, font or file from elsewhere.

A chart is the series' polylines on one pair of axes (the step on x), vertical markers at given steps (findings,
the plateau, the entropy floor), and an optional band (a forecast interval over a range of steps). Long series are
thinned to MAX_POINTS per line by keeping each bucket's first, lowest and highest point, so a spike survives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np

WIDTH, HEIGHT = 640, 220  # px
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 24, 30  # margins, px
MAX_POINTS = 600  # points kept per line (3 per bucket: first, min, max)
LEGEND_CHARS = 12  # a run's name in a legend, at most (the runs table has the whole name)
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


@dataclass(frozen=True)
class Line:
    label: str
    steps: np.ndarray
    values: np.ndarray
    color: str
    dashed: bool = False
    key: str = ""  # the legend's name for it (default: the label, cut to LEGEND_CHARS)


@dataclass(frozen=True)
class Marker:
    step: float
    label: str
    color: str = "#555555"


@dataclass(frozen=True)
class Band:
    """A shaded interval [low, high] over steps [start, end]."""

    start: float
    end: float
    low: float
    high: float
    label: str


def thin(steps: np.ndarray, values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The finite points, at most about max_points: per bucket its first, lowest and highest point, in step order."""
    keep = np.isfinite(values) & np.isfinite(steps)
    s, v = np.asarray(steps, float)[keep], np.asarray(values, float)[keep]
    if s.size <= max_points:
        return s, v
    buckets = np.array_split(np.arange(s.size), max_points // 3)
    idx = sorted({int(i) for b in buckets for i in (b[0], b[np.argmin(v[b])], b[np.argmax(v[b])])})
    return s[idx], v[idx]


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """About n round tick values within [lo, hi]."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _range(values: list[np.ndarray], extra: list[float]) -> tuple[float, float]:
    finite = [v[np.isfinite(v)] for v in values] + [np.asarray([e for e in extra if math.isfinite(e)])]
    allv = np.concatenate(finite) if finite else np.empty(0)
    if allv.size == 0:
        return 0.0, 1.0
    lo, hi = float(allv.min()), float(allv.max())
    pad = 0.05 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.05
    return lo - pad, hi + pad


def chart(title: str, lines: list[Line], markers: list[Marker] = (), band: Band | None = None) -> str:
    """An <svg> element (text) drawing `lines` with `markers` and `band`; title on top, steps on x."""
    thinned = [(ln, *thin(ln.steps, ln.values)) for ln in lines]
    xs = [s for _, s, _ in thinned] + [np.asarray([m.step for m in markers], float)]
    x_lo, x_hi = _range(xs, [band.start, band.end] if band else [])
    y_lo, y_hi = _range([v for _, _, v in thinned], [band.low, band.high] if band else [])
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        return LEFT + (np.asarray(x, float) - x_lo) / (x_hi - x_lo) * pw

    def py(y):
        return TOP + (y_hi - np.asarray(y, float)) / (y_hi - y_lo) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'role="img" aria-label="{escape(title)}">',
           f'<text x="{LEFT}" y="15" font-size="13" font-weight="bold">{escape(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for t in _ticks(y_lo, y_hi):
        y = float(py(t))
        out.append(f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" stroke="#999"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{t:.4g}</text>')
    for t in _ticks(x_lo, x_hi, 6):
        x = float(px(t))
        out.append(f'<line x1="{x:.1f}" y1="{TOP + ph}" x2="{x:.1f}" y2="{TOP + ph + 4}" stroke="#999"/>'
                   f'<text x="{x:.1f}" y="{TOP + ph + 16}" font-size="10" text-anchor="middle">{t:.6g}</text>')
    out.append(f'<text x="{LEFT + pw}" y="{HEIGHT - 2}" font-size="10" text-anchor="end">step</text>')
    if band is not None:
        x0, x1, y0, y1 = float(px(band.start)), float(px(band.end)), float(py(band.high)), float(py(band.low))
        out.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0, 1):.1f}" height="{max(y1 - y0, 1):.1f}" '
                   f'fill="#1f77b4" fill-opacity="0.15"><title>{escape(band.label)}</title></rect>')
    for ln, s, v in thinned:
        if s.size == 0:
            continue
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px(s), py(v)))
        dash = ' stroke-dasharray="5,3"' if ln.dashed else ""
        out.append(f'<polyline fill="none" stroke="{ln.color}" stroke-width="1.3"{dash} points="{points}">'
                   f'<title>{escape(ln.label)}</title></polyline>')
    named = [ln for ln in lines if not ln.dashed]
    if len(named) > 1:  # a legend: each run's colour and name, along the top right
        x = WIDTH - RIGHT
        for ln in reversed(named):
            name = ln.key or ln.label
            text = escape(name if len(name) <= LEGEND_CHARS else name[:LEGEND_CHARS - 1] + "…")
            x -= 7 * min(len(name), LEGEND_CHARS) + 16
            out.append(f'<rect x="{x:.0f}" y="6" width="9" height="9" fill="{ln.color}"/>'
                       f'<text x="{x + 12:.0f}" y="15" font-size="10">{text}</text>')
    for k, m in enumerate(markers):
        x = float(px(m.step))
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" stroke="{m.color}" stroke-dasharray="2,2">'
                   f'<title>{escape(m.label)}</title></line>'
                   f'<text x="{x + 2:.1f}" y="{TOP + 10 + 10 * (k % 3)}" font-size="10" fill="{m.color}">{escape(m.label)}</text>')
    out.append("</svg>")
    return "".join(out)
