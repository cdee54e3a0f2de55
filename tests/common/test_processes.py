"""infra.processes: the living members of a process group and their CPU time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from infra.processes import PROC, group_members, group_stats


def test_a_group_is_its_living_processes_and_none_once_they_are_killed():
    script = (
        "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); "
        "print('ready', flush=True); time.sleep(60)"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert leader.stdout.readline() == "ready\n"
        members = group_members(leader.pid)
        if PROC.is_dir():
            assert leader.pid in members and len(members) == 2  # python and its sleep
            names = {stat.name for stat in group_stats(leader.pid)}
            assert names == {os.path.basename(sys.executable)[:15], "sleep"}
            assert all(
                stat.cpu_ticks >= 0 and stat.state != "Z" for stat in group_stats(leader.pid)
            )
        else:
            assert members == [leader.pid]
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
    # The leader was waited for; its orphaned sleep was reaped by init: nothing of the group is
    # left.
    for _ in range(100):
        if not group_members(leader.pid):
            break
        time.sleep(0.05)
    assert group_members(leader.pid) == []


@pytest.mark.skipif(not PROC.is_dir(), reason="/proc is Linux's")
def test_a_process_name_with_spaces_and_parentheses_is_read_whole(tmp_path):
    program = tmp_path / "odd (name) x"
    program.symlink_to("/bin/sleep")
    child = subprocess.Popen([str(program), "30"], start_new_session=True)
    try:
        for _ in range(100):
            stats = list(group_stats(child.pid))
            if stats and stats[0].name == "odd (name) x":
                break
            time.sleep(0.02)
        assert [(stat.pid, stat.name) for stat in stats] == [(child.pid, "odd (name) x")]
    finally:
        child.kill()
        child.wait()
