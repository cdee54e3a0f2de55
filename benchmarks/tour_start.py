"""A learner's first minute: from ``python course.py tour`` on a fresh clone to the first lesson.

Clones the project at a commit into an empty folder and runs ``python3 course.py tour`` there
as a learner does on a new machine: no ``.venv`` yet, pip's cache off (``PIP_NO_CACHE_DIR``),
so every package comes from the package index; Spark's jars and the broker's stay in the
user's cache (lesson 00 starts no download). The clock runs from launch; each milestone is
the first line of the tour's output that marks it. Once lesson 00 has printed its first line,
the tour is stopped with Ctrl-C (SIGINT), which it handles cleanly.

    python3 benchmarks/tour_start.py              # HEAD
    python3 benchmarks/tour_start.py 51e6dde      # another commit, for a comparison

Standard library only: it runs with the Python a learner has, before any ``.venv`` exists.
The figures are recorded in docs/BENCHMARKS.md with the date and the machine's load.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 900  # seconds for the whole measurement at worst
# (name, the start of the first output line that marks it), in the order they come.
MILESTONES = [
    ("pip starts", "Installing the pinned requirements"),
    ("setup starts", "# setup"),
    ("lesson 00 starts", "# 00_setup_environment"),
]


def measure(commit: str) -> dict[str, float]:
    """Seconds from launch to each milestone, and to lesson 00's first line of its own."""
    with tempfile.TemporaryDirectory(prefix="tour-start-") as scratch:
        clone = Path(scratch) / "course"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", commit], check=True)
        environment = {
            **os.environ,
            "PIP_NO_CACHE_DIR": "1",
            "PYTHONUNBUFFERED": "1",
            "STREAMING_COURSE_HOME": str(Path(scratch) / "home"),
        }
        started = time.perf_counter()
        tour = subprocess.Popen(
            [sys.executable, "course.py", "tour"],
            cwd=clone,
            env=environment,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        seen: dict[str, float] = {}
        in_lesson_00 = False
        try:
            for line in tour.stdout:
                now = time.perf_counter() - started
                for name, start in MILESTONES:
                    if name not in seen and line.lstrip().startswith(start):
                        seen[name] = now
                        in_lesson_00 = name == "lesson 00 starts"
                        break
                else:
                    if in_lesson_00 and line.strip() and not line.startswith("#"):
                        seen["lesson 00's first line"] = now
                        break
                if now > TIMEOUT:
                    break
            os.killpg(tour.pid, signal.SIGINT)  # the tour stops its lesson cleanly
            tour.communicate(timeout=120)
        finally:
            if tour.poll() is None:
                os.killpg(tour.pid, signal.SIGKILL)
                tour.wait()
        return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", nargs="?", default="HEAD", help="the commit to clone (HEAD)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    seen = measure(args.commit)
    print(f"commit {args.commit}, load average at the start {load:.2f}")
    for name, seconds in seen.items():
        print(f"  {name:<24} {seconds:6.1f} s")
    return 0 if "lesson 00's first line" in seen else 1


if __name__ == "__main__":
    sys.exit(main())
