"""Prepare the course: check the machine, create the folders, write the sample data.

Run it with the course's Python (``python course.py tour`` does it for you):

  python initial_setup.py                 # in a terminal: a menu; otherwise = --sample-data
  python initial_setup.py --sample-data   # folders + the sample data every lesson can start from
  python initial_setup.py --folders       # only data/, checkpoints/ and output/
  python initial_setup.py --reset         # empty checkpoints/ and output/ (lessons start afresh)
  python initial_setup.py --check         # only check Python, Java and pyspark

The sample data is the same on every machine (seed 42, first event at
2025-01-15 10:30:00 UTC), so what you see matches the lessons' docstrings:

  data/input_stream/      3 transaction files, 10 lines each; transactions-0003.json has
                          2 broken lines (lines 5 and 10) for lesson 03's quarantine
  data/ecommerce_events/  5 files of 20 shop events (view -> cart -> purchase)
  data/sensor_readings/   4 files of 30 temperature readings, some of them late

Running it again replaces those files with identical ones (and removes files a
simulator added), so the sample data is always the same.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT / "streaming_tutorial"), str(ROOT)]

from common import config, paths  # noqa: E402  (standard library only: works before pyspark is installed)
from data_generators import generate_ecommerce_events, generate_sensor_data, simulate_file_data  # noqa: E402
from infra.environment import run_checks  # noqa: E402
from infra.files import json_lines, write_atomically  # noqa: E402

SEED = 42
TRANSACTION_FILES, TRANSACTIONS_PER_FILE = 3, 10
MALFORMED_FILE, MALFORMED_EVERY = 3, 5  # transactions-0003.json: lines 5 and 10 are broken JSON
ECOMMERCE_FILES, EVENTS_PER_FILE = 5, 20
SENSOR_FILES, READINGS_PER_FILE = 4, 30
SENSOR_DISORDER_SECONDS = 5  # most readings up to 5 s behind; about 10% much later (up to 60 s)

MENU = """What should I set up?
  1  folders only (data/, checkpoints/, output/)
  2  folders + sample data (recommended)
  3  reset: empty checkpoints/ and output/
  4  check the environment (Python, Java, pyspark)"""
MENU_ACTIONS = {"1": ["folders"], "2": ["sample_data"], "3": ["reset"], "4": ["check"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument(
        "--folders", action="store_true", help="create data/, checkpoints/ and output/"
    )
    parser.add_argument(
        "--sample-data", action="store_true", help="create the folders and write the sample data"
    )
    parser.add_argument("--reset", action="store_true", help="empty checkpoints/ and output/")
    parser.add_argument("--check", action="store_true", help="check Python, Java and pyspark")
    args = parser.parse_args(argv)
    chosen = [name for name in ("check", "folders", "reset", "sample_data") if getattr(args, name)]
    try:
        if not chosen:
            chosen = ask() if sys.stdin.isatty() else ["sample_data"]
        return run(chosen)
    except KeyboardInterrupt:
        print("\nStopped with Ctrl-C.")
        return 130


def run(actions: list[str]) -> int:
    """Do the chosen actions in a sensible order; 1 when the environment check fails."""
    ok = True
    if "check" in actions or "sample_data" in actions:  # the full setup checks the machine too
        ok = check_environment()
    if "folders" in actions or "sample_data" in actions:
        create_folders()
    if "reset" in actions:
        reset_state()
    if "sample_data" in actions:
        write_sample_data()
    if ok and "sample_data" in actions:
        print("\nNext: python streaming_tutorial/00_setup_environment.py")
    return 0 if ok else 1


def ask() -> list[str]:
    print(MENU)
    while True:
        try:
            answer = input("Your choice [2]: ").strip() or "2"
        except EOFError:
            answer = "2"
        if answer in MENU_ACTIONS:
            return MENU_ACTIONS[answer]
        print("Please type 1, 2, 3 or 4.")


def check_environment() -> bool:
    print("Environment")
    checks = run_checks()
    for check in checks:
        print(
            f"  {'✓' if check.ok else '✗'} {check.name}: "
            f"{check.detail if check.ok else 'NOT READY'}"
        )
    for check in checks:
        if not check.ok:
            print(f"\n{check.name}: {check.detail}")
    return all(check.ok for check in checks)


def create_folders() -> None:
    print("Folders")
    for folder in paths.GENERATED_DIRS:
        existed = folder.is_dir()
        paths.ensure_dirs(folder)
        print(f"  {'exists ' if existed else 'created'} {paths.display(folder)}/")


def reset_state() -> None:
    """Empty checkpoints/ and output/: every lesson then starts from the beginning."""
    print("Reset")
    for folder in (paths.CHECKPOINT_DIR, paths.OUTPUT_DIR):
        removed = 0
        if folder.is_dir():
            for entry in folder.iterdir():
                if entry.name == ".gitkeep":
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    paths.remove_tree(entry)
                else:
                    entry.unlink()
                removed += 1
        print(
            f"  emptied {paths.display(folder)}/ ({removed} item{'s' if removed != 1 else ''} "
            f"removed)"
        )


def write_sample_data() -> dict[Path, list[Path]]:
    """Write the sample files (replacing earlier ones); returns the files per folder."""
    print(f"Sample data (seed {SEED}, first event {config.BASE_EVENT_TIME:%Y-%m-%d %H:%M} UTC)")
    base = config.BASE_EVENT_TIME
    transactions = simulate_file_data.make_transactions(
        TRANSACTION_FILES * TRANSACTIONS_PER_FILE, seed=SEED, base_time=base
    )
    events = generate_ecommerce_events.make_ecommerce_events(
        ECOMMERCE_FILES * EVENTS_PER_FILE, seed=SEED, base_time=base
    )
    readings = generate_sensor_data.make_sensor_readings(
        SENSOR_FILES * READINGS_PER_FILE,
        seed=SEED,
        base_time=base,
        disorder_seconds=SENSOR_DISORDER_SECONDS,
    )

    transaction_texts = [
        simulate_file_data.render_file(
            part, malformed_every=MALFORMED_EVERY if number == MALFORMED_FILE else 0
        )
        for number, part in enumerate(chunks(transactions, TRANSACTIONS_PER_FILE), start=1)
    ]
    written = {
        paths.TRANSACTIONS_DIR: replace_files(
            paths.TRANSACTIONS_DIR, simulate_file_data, transaction_texts
        ),
        paths.ECOMMERCE_DIR: replace_files(
            paths.ECOMMERCE_DIR,
            generate_ecommerce_events,
            [json_lines(part) for part in chunks(events, EVENTS_PER_FILE)],
        ),
        paths.SENSOR_DIR: replace_files(
            paths.SENSOR_DIR,
            generate_sensor_data,
            [json_lines(part) for part in chunks(readings, READINGS_PER_FILE)],
        ),
    }
    broken = TRANSACTIONS_PER_FILE // MALFORMED_EVERY
    late = generate_sensor_data.count_late(readings, base, SENSOR_DISORDER_SECONDS)
    notes = {
        paths.TRANSACTIONS_DIR: f"{len(transactions) - broken} transactions + {broken} broken "
        f"lines on purpose in {simulate_file_data.FILE_PREFIX}-{MALFORMED_FILE:04d}.json",
        paths.ECOMMERCE_DIR: f"{len(events)} events: "
        + ", ".join(
            f"{sum(event['event_type'] == kind for event in events)} {kind}"
            for kind in ("view", "cart", "purchase")
        ),
        paths.SENSOR_DIR: f"{len(readings)} readings, {late} of them very late",
    }
    for folder, files in written.items():
        print(f"  wrote {len(files)} files to {paths.display(folder)}/ ({notes[folder]})")
    print(
        "  Lessons remember which files they have read: run a lesson with --reset to read these "
        "again."
    )
    return written


def chunks(records: list[dict], size: int) -> list[list[dict]]:
    return [records[index : index + size] for index in range(0, len(records), size)]


def replace_files(folder: Path, generator, texts: list[str]) -> list[Path]:
    """Remove the generator's earlier files from ``folder``, then write ``texts`` as files 1..N.

    The file source reads new files in modification-time order, so the files get
    mtimes one second apart in name order (written in one go, they would tie).
    """
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if generator.FILE_PATTERN.match(old.name):
            old.unlink()
    first_mtime = time.time() - len(texts) - 60
    files = []
    for number, text in enumerate(texts):
        path = write_atomically(folder, f"{generator.FILE_PREFIX}-{number + 1:04d}.json", text)
        os.utime(path, (first_mtime + number, first_mtime + number))
        files.append(path)
    return files


if __name__ == "__main__":
    sys.exit(main())
