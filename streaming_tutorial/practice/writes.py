"""Count a sink's writes, so a check can stop it between two of them, as a crash would.

A sink that writes its data, then something that says "done" (a marker file, a row in a table of
batch ids), survives a crash after it returns, but not one between the two: the restart finds no
"done" and writes the data again. To find that, the checks count what the learner's sink writes
while it runs: a DataFrame writer's save (``save``, ``parquet``, ``json``, ``saveAsTable``...,
the V2 writer's ``append``...), a Delta MERGE, DELETE or UPDATE, and, under the sink's target, a
file opened for writing (counted when it is closed), a rename, a removal, a new folder. After each
write, the counter calls ``on_write(n)`` with the write's number in this call of the sink.

The survive check pauses its child process there and kills it (``practice.survive``); the
in-process sink checks raise :class:`SimulatedCrash`, which no ``except Exception`` catches, and
run the batch again (``practice.sinks``).
"""

from __future__ import annotations

import builtins
import functools
import io
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


class SimulatedCrash(BaseException):
    """Raised inside the learner's sink to stop it where a crash would (not an Exception, so
    their ``except Exception`` does not catch it)."""


class WriteCounter:
    """The writes of one call of a sink: ``count`` of them so far; ``on_write(n)`` after each."""

    def __init__(self, target: Path | None, on_write: Callable[[int], None]) -> None:
        # No target: only Spark's and Delta's writes count, no file.
        self.target = Path(target).resolve() if target is not None else None
        self.on_write = on_write
        self.count = 0
        self.active = False

    def wrote(self, path=None) -> None:
        """A write happened (under the target, when ``path`` is given)."""
        if not self.active or (path is not None and not self.under_target(path)):
            return
        self.count += 1
        self.on_write(self.count)

    def under_target(self, path) -> bool:
        if self.target is None:
            return False
        try:
            resolved = Path(os.fsdecode(path)).resolve()
        except (TypeError, ValueError):
            return False  # a file descriptor, not a path
        return resolved == self.target or self.target in resolved.parents


class CountedFile:
    """A file opened for writing under the target: the write counts when the file is closed
    (by ``with`` or ``close()``), once its data are in it."""

    def __init__(self, handle, on_close) -> None:
        self._handle = handle
        self._on_close = on_close
        self._counted = False

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __iter__(self):
        return iter(self._handle)

    def __enter__(self):
        return self

    def __exit__(self, *_) -> bool:
        self.close()
        return False

    def close(self) -> None:
        self._handle.close()
        if not self._counted:
            self._counted = True
            self._on_close()


def _writers() -> list[tuple[object, str]]:
    """(class, method) of every Spark and Delta call that writes."""
    from delta.tables import DeltaMergeBuilder, DeltaTable
    from pyspark.sql.readwriter import DataFrameWriter, DataFrameWriterV2

    names = ("save", "parquet", "json", "csv", "orc", "text", "saveAsTable", "insertInto")
    found = [(DataFrameWriter, name) for name in names]
    for name in ("append", "overwrite", "overwritePartitions", "create", "replace"):
        found.append((DataFrameWriterV2, name))
    found.append((DeltaMergeBuilder, "execute"))
    found += [(DeltaTable, "delete"), (DeltaTable, "update")]
    return found


FILE_CALLS = [(os, "replace"), (os, "rename"), (os, "remove"), (os, "unlink")]
FILE_CALLS += [(os, "mkdir"), (os, "rmdir"), (shutil, "rmtree")]


@contextmanager
def counting_writes(counter: WriteCounter) -> Iterator[WriteCounter]:
    """Count the writes made inside the block (see the module's docstring); everything patched
    is put back on the way out."""

    def after(function, path_of=None):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            result = function(*args, **kwargs)
            if path_of is None:
                counter.wrote()  # a Spark or Delta write: wherever it goes, the sink made it
            elif args:
                counter.wrote(path_of(*args))
            return result

        return wrapper

    def first(path, *_):
        return path

    opened = builtins.open
    raw_open = os.open

    @functools.wraps(opened)
    def open_counted(file, mode="r", *args, **kwargs):
        handle = opened(file, mode, *args, **kwargs)
        if isinstance(file, int) or not any(letter in mode for letter in "wax+"):
            return handle
        if not counter.active or not counter.under_target(file):
            return handle
        return CountedFile(handle, lambda: counter.wrote(file))

    @functools.wraps(raw_open)
    def os_open_counted(path, flags, *args, **kwargs):
        descriptor = raw_open(path, flags, *args, **kwargs)
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            counter.wrote(path)
        return descriptor

    patches = [(owner, name, after(getattr(owner, name))) for owner, name in _writers()]
    patches += [(owner, name, after(getattr(owner, name), first)) for owner, name in FILE_CALLS]
    patches += [(builtins, "open", open_counted), (io, "open", open_counted)]
    patches.append((os, "open", os_open_counted))
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, patched in patches:
        setattr(owner, name, patched)
    counter.active, counter.count = True, 0
    try:
        yield counter
    finally:
        counter.active = False
        for owner, name, original in originals:
            setattr(owner, name, original)
