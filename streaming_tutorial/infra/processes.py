"""Processes the course started: is one alive, and a process group's members and CPU time.

A lesson that kills or measures what it started (lesson 16's child, lesson 18's
spark-pipelines commands) starts it in a process group of its own and asks::

    group_members(pgid)           # living (not zombie) pids; [pgid] or [] where /proc is missing
    for stat in group_stats(pgid):    # pid, name, CPU ticks of each living member (Linux only)
        ...
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

PROC = Path("/proc")


def alive(pid: int) -> bool:
    """True while process ``pid`` exists (someone else's counts too: signal 0 is refused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


@dataclass(frozen=True)
class ProcessStat:
    """One line of /proc/<pid>/stat, the fields the course reads."""

    pid: int
    name: str  # the program's name, as the kernel keeps it (at most 15 characters)
    state: str  # "R", "S", ... "Z" for a zombie: ended, not yet waited for
    pgid: int
    cpu_ticks: int  # user + system time, in clock ticks (os.sysconf("SC_CLK_TCK") a second)

    @property
    def path(self) -> Path:
        return PROC / str(self.pid)


def group_stats(pgid: int) -> Iterator[ProcessStat]:
    """The processes of group ``pgid`` that have not ended (zombies left out). Linux only: none
    where there is no /proc."""
    if not PROC.is_dir():
        return
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        # "pid (name) state ppid pgrp ...": the name may hold spaces and parentheses, so split after
        # the last ")".
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:  # utime and stime: fields 14 and 15 of stat
            yield ProcessStat(
                int(entry.name),
                stat[stat.index("(") + 1 : stat.rindex(")")],
                fields[0],
                pgid,
                int(fields[11]) + int(fields[12]),
            )


def group_members(pgid: int) -> list[int]:
    """Living (not zombie) processes of a process group: from /proc on Linux; elsewhere (macOS)
    ``[pgid]`` while the kernel says the group exists, else ``[]``."""
    if not PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    return [stat.pid for stat in group_stats(pgid)]
