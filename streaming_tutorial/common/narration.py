"""How a lesson talks to the learner: section banners, wrapped paragraphs, Spark's first line.

Everything here prints to stdout (what the learner should read); diagnostics go to
stderr through logging and the JVM's log4j configuration.
"""

from __future__ import annotations

import textwrap

WIDTH = 72
MESSAGE_WIDTH = 160  # how much of Spark's first line a lesson shows


def banner(title: str) -> None:
    """A section heading, so the learner can find each part of the output."""
    print(f"\n{'=' * WIDTH}\n{title}\n{'=' * WIDTH}", flush=True)


def say(text: str) -> None:
    """A paragraph for the learner, wrapped."""
    # Collapse all whitespace first: a triple-quoted paragraph keeps its continuation
    # lines' indentation otherwise.
    print(textwrap.fill(" ".join(text.split()), width=WIDTH), flush=True)


def first_line(error: BaseException | str, width: int = MESSAGE_WIDTH) -> str:
    """The first line of an error's message, cut to ``width`` characters: how lessons quote Spark."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    return line if len(line) <= width else line[: width - 3] + "..."


def print_table(header: tuple, rows: list[tuple]) -> None:
    """A plain text table, left-aligned, in one print (so no other output cuts into it)."""
    cells = [tuple(str(cell) for cell in header)] + [tuple(str(cell) for cell in row) for row in rows]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    lines = ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    print("\n".join(lines), flush=True)
