"""One small shared figure style: a colour-blind-safe palette, font sizes, a context manager.

The palette is Okabe & Ito (2008), "Color Universal Design": eight colours that stay distinct
under the common forms of colour blindness and in greyscale print (they differ in lightness too).
Use the named roles (`DATA`, `FIT`, `THEORY`, ...) so every figure of the project reads the same:
measured data in black/grey, fitted curves in blue, theory predictions in vermillion.

    from gspo_dynamics.plots.style import figure_style, COLORS
    with figure_style():
        fig, ax = plt.subplots()
        ax.plot(t, r, color=COLORS["blue"])
"""

from __future__ import annotations

import contextlib

import matplotlib as mpl

# Okabe-Ito palette, in its usual order.
COLORS: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
# The cycle used for unnamed series; yellow comes last because it is faint on white.
CYCLE: tuple[str, ...] = tuple(COLORS[n] for n in ("blue", "vermillion", "bluish_green", "orange",
                                                  "reddish_purple", "sky_blue", "black", "yellow"))

# Roles: what a colour means across the project's figures.
DATA = "#555555"  # measured points (grey, so fitted and predicted curves stand out on top)
FIT = COLORS["blue"]  # fitted closed form
THEORY = COLORS["vermillion"]  # a theory prediction
WARN = COLORS["orange"]  # a threshold, a flagged region
OK = COLORS["bluish_green"]  # a healthy range
ALT = COLORS["reddish_purple"]  # a second comparison curve

# Font sizes in points: readable at a single-column width (~3.3 in) after no rescaling.
FONT_SIZE = 9
TITLE_SIZE = 10
SMALL_SIZE = 8

RC: dict[str, object] = {
    "font.size": FONT_SIZE,
    "axes.titlesize": TITLE_SIZE,
    "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": SMALL_SIZE,
    "ytick.labelsize": SMALL_SIZE,
    "legend.fontsize": SMALL_SIZE,
    "legend.frameon": False,
    "axes.prop_cycle": mpl.cycler(color=list(CYCLE)),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "lines.linewidth": 1.4,
    "lines.markersize": 3,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
}


@contextlib.contextmanager
def figure_style():
    """Apply `RC` inside the block (matplotlib's rc_context; the caller's settings come back after)."""
    with mpl.rc_context(RC):
        yield


def note(ax, text: str) -> None:
    """Write `text` in the middle of an empty panel (say why there is no data) and hide its ticks."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=SMALL_SIZE,
            color=DATA, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
