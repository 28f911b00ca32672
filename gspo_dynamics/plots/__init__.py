"""Figure functions. Each draws into a given matplotlib axis (or returns a new Figure) and never
saves: the caller decides where the figure goes. `style` holds the shared palette and sizes."""

from gspo_dynamics.plots.style import COLORS, CYCLE, figure_style

__all__ = ["COLORS", "CYCLE", "figure_style"]
