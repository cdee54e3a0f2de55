"""Writing files the way a streaming file source needs them: atomically, as JSON Lines."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable


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
