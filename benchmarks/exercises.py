"""The exercises' two speed figures (docs/PERFORMANCE.md, "Exercises"):

- watch mode, from saving a windowed exercise to its verdict, with the session warm: the real
  watch loop (watchfiles noticing the save, then the check), a wrong answer and a right one
  saved in turn, ``--saves`` times; p50 and p90;
- checking every reference solution in one session (a warm session, as the suite's), and the
  same without the survive exercises (they start two child JVMs each).

    .venv/bin/python benchmarks/exercises.py [--saves 20] [--exercise 06.1]

Run it alone: two Spark runs at once make every figure meaningless. Print the machine's load
(``uptime``) with it.
"""

from __future__ import annotations

import argparse
import queue
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "streaming_tutorial"))

from practice import answers as stored  # noqa: E402
from practice import catalog, cli  # noqa: E402
from practice.checking import check  # noqa: E402
from practice.session import exercise_session  # noqa: E402
from practice.watch import Watcher, watch_saves  # noqa: E402


def save_to_verdict(spark, exercise_id: str, saves: int, work: Path) -> list[float]:
    """Seconds from each save to its verdict, through the real watch loop."""
    exercises = catalog.all_exercises()
    exercise = catalog.find(exercises, exercise_id)
    root = work / "my_exercises"
    cli.start([exercise], root)
    watcher = Watcher(spark, exercises, root, exercise, clear=False, work_root=work / "runs")
    answers = [catalog.solution(exercise).read_bytes()]
    answers += [
        stored.whole_file(exercise, path).encode("utf-8") for path in catalog.mistakes(exercise)
    ]
    events: queue.Queue = queue.Queue()
    stop = threading.Event()
    threading.Thread(target=watch_saves, args=(root, events, stop), daemon=True).start()
    mine = catalog.mine(exercise, root)
    watcher.check_now()  # the first check: what the learner sees when watch starts
    seconds = []
    try:
        for number in range(saves + 2):  # the first two are the warm-up, not counted
            content = answers[number % len(answers)] + f"# save {number}\n".encode()
            saved = time.perf_counter()
            mine.write_bytes(content)
            while True:
                kind, value = events.get(timeout=60)
                if kind == "saved" and mine.resolve() in value:
                    break
            watcher.on_saved(value)
            if number >= 2:
                seconds.append(time.perf_counter() - saved)
    finally:
        stop.set()
    return seconds


def all_solutions(spark, work: Path, *, survive: bool) -> tuple[float, int]:
    exercises = [
        exercise for exercise in catalog.all_exercises() if survive or exercise.kind != "survive"
    ]
    started = time.perf_counter()
    for exercise in exercises:
        verdict = check(spark, exercise, catalog.solution(exercise), work / exercise.id)
        if not verdict.passed:
            raise SystemExit(f"{exercise.id}'s solution failed:\n{verdict.report}")
    return time.perf_counter() - started, len(exercises)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--exercise", default="06.1", help="a windowed exercise (default 06.1)")
    args = parser.parse_args()
    spark = exercise_session()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        seconds = save_to_verdict(spark, args.exercise, args.saves, work)
        quantiles = statistics.quantiles(seconds, n=10)
        print(
            f"watch, save -> verdict ({args.exercise}, {len(seconds)} saves): "
            f"p50 {statistics.median(seconds):.2f} s, p90 {quantiles[8]:.2f} s, "
            f"min {min(seconds):.2f} s, max {max(seconds):.2f} s"
        )
        elapsed, count = all_solutions(spark, work / "no-survive", survive=False)
        print(f"every solution but the survive ones ({count}): {elapsed:.1f} s")
        elapsed, count = all_solutions(spark, work / "all", survive=True)
        print(f"every solution ({count}): {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
