"""How the file simulators drop files into a watched folder: numbered, in order, at a pace.

Every file simulator's ``main()`` ends the same way::

    first_file, start = continue_after(folder, FILE_PATTERN)
    batches = (
        [SimFile(f"readings-{first_file + n:04d}.json", text_of(n), note_of(n))]
        for n in range(count)
    )
    return run_file_simulator("sensors", folder, batches, interval)

``write_files_paced`` is the loop: each file written atomically (a streaming reader
never lists half a file), each a little newer than the one before (the file source
reads new files in modification-time order), one progress line per file, and a pause
of ``interval`` seconds between batches, none after the last.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

from common import paths
from infra.files import write_atomically
from infra.simulators import pause, run_simulator

MTIME_STEP_NS = 1_000_000  # the file source compares modification times in milliseconds
FILES_COMPLETE = "every file written so far is complete."


class SimFile(NamedTuple):
    """One file a simulator writes."""

    name: str  # relative to the folder; "clicks/clicks-0001.json" writes into a subfolder
    text: str
    note: str = ""  # what its progress line says about it: "wrote <path> (<note>)"


def write_files_paced(
    folder: Path, batches: Iterable[Sequence[SimFile]], interval: float
) -> list[Path]:
    """Write each batch's files into ``folder`` in order, with ``interval`` seconds between batches.

    A batch is what one step of a simulator drops at once: usually one file; lesson 09's
    ad simulator drops impressions and clicks together. ``batches`` is read lazily, so a
    simulator can compute each file when its turn comes. Returns the files written.
    """
    written: list[Path] = []
    last_mtime = 0
    for number, batch in enumerate(batches):
        if number and interval:
            pause(interval)  # a Ctrl-C or a lesson's SIGTERM ends it at once
        for file in batch:
            target = folder / file.name
            write_atomically(target.parent, target.name, file.text)
            last_mtime = keep_in_order(target, last_mtime)
            note = f" ({file.note})" if file.note else ""
            print(f"wrote {paths.display(target)}{note}", flush=True)
            written.append(target)
    return written


def run_file_simulator(
    name: str, folder: Path, batches: Iterable[Sequence[SimFile]], interval: float
) -> int:
    """A file simulator's whole run, as its ``main()`` returns it: 0 when done or stopped by a
    lesson, 130 on Ctrl-C."""
    return run_simulator(
        name, lambda: write_files_paced(folder, batches, interval), stopped=FILES_COMPLETE
    )


def continue_after(folder: Path, file_pattern: re.Pattern) -> tuple[int, int]:
    """(next file number, next record index) after the simulator files already in ``folder``.

    ``file_pattern`` matches the simulator's file names with the file number as group 1.
    Counting lines (broken ones included) keeps record ids unique across runs, so a
    simulator started again never overwrites or repeats what is there.
    """
    numbers, lines = [0], 0
    if folder.is_dir():
        for path in folder.iterdir():
            match = file_pattern.match(path.name)
            if match:
                numbers.append(int(match.group(1)))
                lines += len(path.read_text(encoding="utf-8").splitlines())
    return max(numbers) + 1, lines


def keep_in_order(path: Path, previous_mtime_ns: int) -> int:
    """Give ``path`` a modification time at least 1 ms after the previous file's; return it.

    The file source picks up new files in modification-time order (in milliseconds);
    files written back to back (--interval 0) could otherwise tie and be read out of order.
    """
    mtime = path.stat().st_mtime_ns
    if mtime < previous_mtime_ns + MTIME_STEP_NS:
        mtime = previous_mtime_ns + MTIME_STEP_NS
        os.utime(path, ns=(mtime, mtime))
    return mtime
