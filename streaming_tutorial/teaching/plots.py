"""Pictures of a run, written as PNG files: the one way every lesson opens and saves a figure."""

from __future__ import annotations

from pathlib import Path


def new_figure(*subplots: int, **options):
    """``plt.subplots(*subplots, **options)`` on a backend that needs no display: (figure, axes)."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed: write a PNG file
    import matplotlib.pyplot as plt

    return plt.subplots(*subplots, **options)


def save_figure(figure, target: Path) -> Path:
    """Lay the figure out, write it to ``target`` (creating its folder) and free it."""
    import matplotlib.pyplot as plt

    target.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(target)
    plt.close(figure)
    return target
