"""Time to first output: from launching a lesson (cold JVM, warm jar caches) to its first batch.

Lesson 01 (rate source -> console) runs as a learner runs it, a fresh Python process with an
empty course home of its own; the clock runs from launch until stdout shows its first
``Batch: N`` table heading. The lesson is then stopped with Ctrl-C (SIGINT), which it
handles cleanly. The jar list and the JVM's class archive are in ~/.cache and stay warm.

- ``first_output_s``: median seconds from launch to the first batch's output.
- ``first_output_first_line_s``: to the lesson's first line (Python started, imports done,
  before the JVM starts).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

from benchmarks.harness import ROOT, Results, Stats

LESSON = ROOT / "streaming_tutorial" / "01_basic_streaming.py"
BATCH_HEADING = "Batch: "
TIMEOUT = 120  # seconds for one launch at worst


def launch_once() -> tuple[float, float]:
    """(seconds to the first line, seconds to the first batch) of one launch."""
    with tempfile.TemporaryDirectory(prefix="first-output-") as home:
        env = {**os.environ, "STREAMING_COURSE_HOME": home, "PYTHONUNBUFFERED": "1"}
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, str(LESSON), "--duration", "30"],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        first_line = first_batch = None
        try:
            for line in process.stdout:
                now = time.perf_counter() - started
                first_line = first_line if first_line is not None else now
                if line.startswith(BATCH_HEADING):
                    first_batch = now
                    break
                if now > TIMEOUT:
                    break
            process.send_signal(signal.SIGINT)  # the lesson stops its query between batches
            process.communicate(timeout=TIMEOUT)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if first_batch is None:
            raise RuntimeError(
                f"{LESSON.name} printed no batch within {TIMEOUT} s (exit {process.returncode})"
            )
        return first_line, first_batch


def run(results: Results, progress, size) -> None:
    launches = []
    for number in range(size.first_output_runs):
        with progress.step(
            "first output", f"{LESSON.name}, launch {number + 1} of {size.first_output_runs}"
        ):
            launches.append(launch_once())
    results.put_median("first_output_s", Stats.of([batch for _, batch in launches]))
    results.put_median("first_output_first_line_s", Stats.of([line for line, _ in launches]))
