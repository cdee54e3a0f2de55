"""Writing files the way a streaming file source needs them: atomically."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable


def iso(moment: datetime) -> str:
    """A UTC timestamp as the JSON files carry it: 2025-01-15T10:30:00.000Z."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def staging_dir_for(folder: Path) -> Path:
    """A sibling folder on the same file system, so a rename is atomic.

    The staging folder is hidden and outside the watched folder: Spark never lists a
    half-written file.
    """
    return folder.parent / f".{folder.name}.staging"


def write_atomically(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` to ``folder/name`` so a reader sees all of it or nothing.

    A streaming file source lists the folder on every trigger; writing in place would
    let it pick up a file that is only half written. Writing elsewhere, then renaming
    (atomic on one file system), avoids that.
    """
    folder.mkdir(parents=True, exist_ok=True)
    staging = staging_dir_for(folder)
    staging.mkdir(parents=True, exist_ok=True)
    temporary = staging / name
    temporary.write_text(text, encoding="utf-8")
    target = folder / name
    os.replace(temporary, target)
    return target


def json_lines(records: Iterable[dict]) -> str:
    """One JSON object per line (the JSON Lines format Spark reads by default)."""
    return "".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records)


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
    """Give ``path`` a modification time at least 1 ms after the previous file's.

    The file source picks up new files in modification-time order (in milliseconds);
    files written back to back (--interval 0) could otherwise tie and be read out of order.
    """
    mtime = path.stat().st_mtime_ns
    if mtime < previous_mtime_ns + 1_000_000:
        mtime = previous_mtime_ns + 1_000_000
        os.utime(path, ns=(mtime, mtime))
    return mtime
