"""How a lesson talks to the learner: section banners, wrapped paragraphs, Spark's first line,
tables (of plain rows, or of each micro-batch of a query).

Everything here prints to stdout (what the learner should read); diagnostics go to
stderr through logging and the JVM's log4j configuration.
"""

from __future__ import annotations

import textwrap
import threading
from typing import Callable

WIDTH = 72
MESSAGE_WIDTH = 160  # how much of Spark's first line a lesson shows
SHOW_ROWS = 20  # rows of a micro-batch table_printer shows (Spark's own default)
_ONE_TABLE_AT_A_TIME = (
    threading.Lock()
)  # queries running at once print whole tables, not mixed lines


def banner(title: str) -> None:
    """A section heading, so the learner can find each part of the output."""
    print(f"\n{'=' * WIDTH}\n{title}\n{'=' * WIDTH}", flush=True)


def say(text: str) -> None:
    """A paragraph for the learner, wrapped."""
    # Collapse all whitespace first: a triple-quoted paragraph keeps its continuation
    # lines' indentation otherwise.
    print(textwrap.fill(" ".join(text.split()), width=WIDTH), flush=True)


def first_line(error: BaseException | str, width: int = MESSAGE_WIDTH) -> str:
    """An error message's first line, cut to ``width`` characters: how lessons quote Spark."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    return line if len(line) <= width else line[: width - 3] + "..."


def print_table(header: tuple, rows: list[tuple]) -> None:
    """A plain text table, left-aligned, in one print (so no other output cuts into it)."""
    cells = [tuple(str(cell) for cell in header)] + [
        tuple(str(cell) for cell in row) for row in rows
    ]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    lines = [
        "  "
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    print("\n".join(lines), flush=True)


def table_printer(label: str, *, rows: int = SHOW_ROWS) -> Callable:
    """A foreachBatch function that prints each micro-batch as a table headed by ``label``.

    The console sink heads its tables "Batch: N" only, and the tables of queries running
    at once interleave. This one names the query, prints one whole table at a time, and
    sorts the rows by every column, so a table reads the same on every run. Wrap it in
    ``runner.foreach_batch`` for a quiet stop.
    """

    def show(batch, batch_id: int) -> None:
        with _ONE_TABLE_AT_A_TIME:
            print(f"--- {label} · batch {batch_id} ---", flush=True)
            batch.orderBy(*batch.columns).show(rows, truncate=False)

    return show
