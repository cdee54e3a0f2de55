"""lesson16_crash_harness: children in their own process group, pause markers, SIGKILL of the
whole group, tallies.

No JVM here: the children are small Python programs that behave like a streaming child (one
also starts a grandchild, as pyspark starts its JVM). The real kills of a Spark query are
checked by lesson 16's smoke test.
"""

from __future__ import annotations

import os
import socket
import sys
import textwrap
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path

import lesson16_crash_harness as crash
import pytest

BASE = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)

# A child that starts a grandchild in its own group (like pyspark's JVM), says so, and pauses
# at after-sink of batch 1 when CRASH_PAUSE_AT asks for it.
CHILD = textwrap.dedent("""
    import subprocess, sys, time
    sys.path.insert(0, {common!r})
    import lesson16_crash_harness as crash
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print("grandchild", grandchild.pid, flush=True)
    for batch_id in (0, 1, 2):
        crash.pause_here("before-sink", batch_id, "events")
        print("wrote batch", batch_id, flush=True)
        crash.pause_here("after-sink", batch_id, "events")
    time.sleep(300)
""")


def child_script(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(common=str(Path(crash.__file__).parent)))
    return script


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_kill_at_a_marker_leaves_no_process_of_the_group(tmp_path):
    with crash.child_process(
        crash.python_command(child_script(tmp_path)),
        tmp_path / "child.log",
        tmp_path / "markers",
        pause_at="events@after-sink:1",
    ) as child:
        [marker] = child.wait_for_marker("after-sink", 1, "events")
        grandchild = int(child.log.read_text().split()[1])
        assert marker["batch_id"] == 1 and marker["point"] == "after-sink" and alive(grandchild)
        assert "wrote batch 1" in child.log_tail() and "wrote batch 2" not in child.log_tail()
        child.kill()
        assert crash.group_members(child.pgid) == []
        assert not alive(grandchild) and child.process.returncode == -9


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_leaving_the_block_on_ctrl_c_kills_the_child_group(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with crash.child_process(
            crash.python_command(child_script(tmp_path)),
            tmp_path / "child.log",
            tmp_path / "markers",
            pause_at="before-sink:0",
        ) as child:
            child.wait_for_marker("before-sink", 0, "events")
            raise KeyboardInterrupt
    assert crash.group_members(child.pgid) == [] and child.process.returncode == -9


def test_a_marker_that_never_comes_fails_with_the_log_tail(tmp_path):
    with crash.child_process(
        crash.python_command(child_script(tmp_path)), tmp_path / "child.log", tmp_path / "markers"
    ) as child:
        child.wait_for(lambda: "wrote batch 2" in child.log_tail(), "its last batch")
        with pytest.raises(crash.CrashError) as failure:
            child.wait_for_marker("after-sink", 1, "events", timeout=1)
    message = str(failure.value)
    assert "did not reach after-sink of batch 1 in events within 1 s" in message
    assert "wrote batch 2" in message and str(tmp_path / "child.log") in message


def test_a_child_that_ends_early_fails_with_its_exit_code_and_log(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('no such table: events', flush=True)\nsys.exit(3)\n")
    with crash.child_process(
        crash.python_command(script), tmp_path / "child.log", tmp_path / "markers"
    ) as child:
        with pytest.raises(
            crash.CrashError,
            match=r"ended \(exit code 3\) before the commit of batch 0"
            r"[\s\S]*no such table: events",
        ):
            child.wait_for_commit(0, tmp_path / "checkpoint")
    with pytest.raises(crash.CrashError, match=r"failed \(exit code 3\)[\s\S]*no such table"):
        child.wait()


def test_wait_for_commit_sees_a_commit_file(tmp_path):
    script = tmp_path / "commits.py"
    script.write_text(
        f"import os, time\nos.makedirs({str(tmp_path / 'ck' / 'commits')!r}, exist_ok=True)\n"
        f"open({str(tmp_path / 'ck' / 'commits' / '0')!r}, 'w').close()\ntime.sleep(300)\n"
    )
    with crash.child_process(
        crash.python_command(script), tmp_path / "child.log", tmp_path / "markers"
    ) as child:
        child.wait_for_commit(0, tmp_path / "ck")
        assert child.alive()


def test_pause_points_parse_and_refuse_typos():
    assert crash.pause_points("after-sink:1, windows@before-sink:0") == {
        ("", "after-sink", 1),
        ("windows", "before-sink", 0),
    }
    assert crash.pause_points("") == set()
    with pytest.raises(ValueError, match="after-commit:1"):
        crash.pause_points("after-commit:1")
    with pytest.raises(ValueError):
        crash.start_child(
            [sys.executable, "-c", "pass"],
            Path("/nonexistent/log"),
            Path("/x"),
            pause_at="after-sink",
        )


def test_tally_counts_lost_duplicated_and_unexpected_ids():
    result = crash.tally(["R-1", "R-2", "R-3", "R-4"], ["R-1", "R-2", "R-2", "R-2", "R-4", "R-9"])
    assert (result.lost, result.duplicated, result.unexpected) == (1, 2, 1)
    assert str(crash.tally(["R-1"], ["R-1"])) == "rows lost: 0, rows duplicated: 0"


def test_numbered_records_are_a_pure_function_of_their_number():
    whole = crash.numbered_records(1, 10, seed=7, base_time=BASE)
    assert crash.numbered_records(4, 3, seed=7, base_time=BASE) == whole[3:6]
    assert [record["record_id"] for record in whole[:2]] == ["R-0001", "R-0002"]
    assert whole != crash.numbered_records(1, 10, seed=8, base_time=BASE)
    times = [
        datetime.fromisoformat(record["event_time"].replace("Z", "+00:00")) for record in whole
    ]
    # Out of order by less than one step (10 s): never late for a watermark of a minute.
    assert all((later - earlier).total_seconds() > -10 for earlier, later in pairwise(times))
    assert all(BASE < moment <= BASE.replace(minute=32) for moment in times)


def test_logged_batches(tmp_path):
    checkpoint = tmp_path / "ck"
    for log, ids in (("offsets", (0, 1)), ("commits", (0,))):
        (checkpoint / log).mkdir(parents=True)
        for batch_id in ids:
            (checkpoint / log / str(batch_id)).write_text('v1\n{"logOffset":%d}\n' % batch_id)
    assert crash.logged_batches(checkpoint) == "offsets/ 0 1, commits/ 0"
    assert crash.logged_batches(tmp_path / "none") == "offsets/ (empty), commits/ (empty)"


def test_line_server_sends_only_to_connected_clients():
    with crash.LineServer() as server:
        assert server.send("nobody hears this") == 0
        with socket.create_connection((server.host, server.port)) as client:
            crash.wait_until(lambda: server.connections() == 1, "the connection", 10)
            assert server.send("one", "two") == 1
            received = b""
            while received.count(b"\n") < 2:
                received += client.recv(100)
        assert received == b"one\ntwo\n"
