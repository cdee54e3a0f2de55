"""Seeded kill -9 cycles: one child streams the same files into Delta, a database and a file sink,
killed at random.

Each cycle adds input files, starts ``crash_child.py`` on the same checkpoints and SIGKILLs its
whole process group (JVM included) at a point drawn from a seeded ``random.Random``: after a random
delay (anywhere: planning, a Spark job, a Delta commit, the file sink's part files or its metadata
log), or paused by ``crash.pausable`` before the Delta write, between Delta and the database, or
after both before Spark's commit, at a random batch of the cycle. After the last cycle one clean
availableNow run (in the test's session) finishes the input, and every sink is counted against it by
record id: 0 lost, 0 duplicated.

A failure names its seed. The seed fixes the plan: how many files each cycle adds, the order of
the kinds of kill, the delays. Where a drawn point lands also depends on how far the last child got
(a batch may read two files after a kill), so a rerun repeats the plan, not the exact timing.
To rerun a seed, or to try other plans:

    CRASH_SEED=1234 CRASH_CYCLES=10 python course.py test -m crash -k kill_cycles
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import crash_child
import lesson16_crash_harness as crash
import pytest

from common import config, database
from infra import checkpoints
from infra.runner import finish

SEED_ENV, CYCLES_ENV = "CRASH_SEED", "CRASH_CYCLES"
DEFAULT_SEED, DEFAULT_CYCLES = 9, 5
RECORDS_PER_FILE = 10
MAX_NEW_FILES = 3  # per cycle
MAX_DELAY_SECONDS = 6.0  # a random kill lands within this long after the child's queries started
PAUSES = (
    "delta@before-sink",
    "delta@after-sink",
    "database@after-sink",
)  # before Delta, between, after both
KINDS = ("delay", *PAUSES)


def seed_and_cycles() -> tuple[int, int]:
    return int(os.environ.get(SEED_ENV) or DEFAULT_SEED), int(
        os.environ.get(CYCLES_ENV) or DEFAULT_CYCLES
    )


@dataclass
class Kill:
    """Where a cycle's kill lands: after ``delay`` seconds, or at ``pause`` ("label@point") of
    ``batch``."""

    new_files: int
    delay: float | None = None
    pause: str = ""
    batch: int = 0

    def __str__(self) -> str:
        return (
            f"after {self.delay:.1f} s"
            if self.pause == ""
            else f"at {self.pause} of batch {self.batch}"
        )


def draw_kinds(rng: random.Random, cycles: int) -> list[str]:
    """Each cycle's kind of kill: every kind once in the first cycles (in a random order), then
    any."""
    return rng.sample(KINDS, len(KINDS))[:cycles] + [
        rng.choice(KINDS) for _ in range(cycles - len(KINDS))
    ]


def draw_kill(rng: random.Random, kind: str, first_batch: int, pending_files: int) -> Kill:
    """The cycle's new files and its kill point. A pause names a batch this cycle is sure to run:
    one batch per input file the batches query has not committed, from ``first_batch`` on."""
    new_files = rng.randint(1, MAX_NEW_FILES)
    if kind == "delay":
        return Kill(new_files, delay=round(rng.uniform(0.0, MAX_DELAY_SECONDS), 1))
    return Kill(new_files, pause=kind, batch=first_batch + rng.randrange(pending_files + new_files))


def next_batch(checkpoint: Path) -> int:
    """The first batch id a restart runs that is not committed yet (one batch per file: also the
    files read)."""
    last = checkpoints.last_commit(checkpoint)
    return 0 if last is None else last + 1


def add_files(where, seed: int, first_file: int, count: int) -> list[str]:
    """``count`` new input files of RECORDS_PER_FILE records each, a pure function of the seed;
    their ids."""
    ids = []
    for number in range(first_file, first_file + count):
        records = crash.numbered_records(
            number * RECORDS_PER_FILE + 1,
            RECORDS_PER_FILE,
            seed=seed,
            base_time=config.BASE_EVENT_TIME,
        )
        crash.write_records(where.input, f"part-{number:03d}.json", records)
        ids.extend(record["record_id"] for record in records)
    return ids


def drained(where) -> bool:
    """The batches query has planned and committed every input file: no drawn batch is still to
    come.

    The file source logs a batch's files (sources/0/N) while planning it, BEFORE offsets/ names the
    batch: "planned" means the last offsets file covers the source log's last entry.
    """
    checkpoint = where.checkpoints / "batches"
    offsets, commits = (checkpoints.batch_ids(checkpoint / log) for log in ("offsets", "commits"))
    if not commits or offsets[-1] != commits[-1]:
        return False
    source_log = checkpoints.batch_ids(checkpoint / "sources" / "0")  # with "<N>.compact" entries
    newest = checkpoints.read_offsets(checkpoint / "offsets" / str(offsets[-1]))
    covered = checkpoints.file_source_offset(newest.sources[0])
    return max(source_log) == covered and checkpoints.source_files(checkpoint) >= {
        path.name for path in where.input.glob("*.json")
    }


def run_cycle(where, root: Path, cycle: int, kill: Kill) -> str:
    """Start the child, kill it where ``kill`` says; what the two checkpoints held at the kill."""
    command = crash.python_command(Path(crash_child.__file__), "--root", str(root), "wait")
    markers = root / "markers" / str(cycle)  # a cycle of its own: an old marker must not count
    pause_at = f"{kill.pause}:{kill.batch}" if kill.pause else ""
    with crash.child_process(
        command, root / "logs" / f"cycle-{cycle}.log", markers, pause_at=pause_at
    ) as child:
        if kill.pause:
            label, point = kill.pause.split("@")
            marker = markers / crash.marker_name(point, kill.batch, label)
            # A kill between the file source's log and the offsets log can make a later batch read
            # two files: then the drawn batch never comes, and the child is killed idle instead of
            # failing here.
            child.wait_for(
                lambda: marker.exists() or drained(where), f"{kill.pause} of batch {kill.batch}"
            )
            note = "" if marker.exists() else " (that batch never ran: killed idle)"
        else:
            child.wait_for(
                lambda: crash_child.STARTED in child.log_tail(10_000), "its queries' start"
            )
            time.sleep(kill.delay)  # not an oracle: the random moment of the kill
            if not child.alive():
                raise crash.CrashError(
                    f"The child ended before its kill. Its log:\n{child.log_tail()}"
                )
            note = ""
        held = crash.logged_batches_of(where.checkpoints, "batches", "files")
        child.kill()
    return held + note


def file_sink_rows(spark, folder: Path) -> tuple[list[str], int]:
    """The file sink's ids as its _spark_metadata log lists them, and the lines of every part file
    on disk."""
    committed = (
        spark.read.schema(crash_child.SCHEMA).json(str(folder)).select("record_id").collect()
    )
    on_disk = sum(
        len(path.read_text(encoding="utf-8").splitlines()) for path in folder.glob("part-*")
    )
    return [row[0] for row in committed], on_disk


@pytest.mark.crash
def test_kill_cycles_at_random_points_lose_and_duplicate_nothing_in_delta_a_database_and_file_sink(
    spark, tmp_path, capsys
):
    seed, cycles = seed_and_cycles()
    rng = random.Random(seed)
    root = tmp_path / "crash"
    where = crash_child.folders(root)
    reproduce = f"seed {seed}, {cycles} cycles (reproduce: {SEED_ENV}={seed} {CYCLES_ENV}={cycles})"
    print(reproduce)
    input_ids, written = [], 0
    try:
        for cycle, kind in enumerate(draw_kinds(rng, cycles), start=1):
            first_batch = next_batch(where.checkpoints / "batches")
            kill = draw_kill(rng, kind, first_batch, written - first_batch)
            input_ids += add_files(where, seed, written, kill.new_files)
            written += kill.new_files
            held = run_cycle(where, root, cycle, kill)
            print(f"cycle {cycle}: {kill.new_files} new file(s), killed {kill}: {held}")
        input_ids += add_files(where, seed, written, 1)  # and one more for the clean run
        finish(crash_child.start_all(spark, where, {"availableNow": True}))

        delta_ids = [
            row[0]
            for row in spark.read.format("delta")
            .load(str(where.delta))
            .select("record_id")
            .collect()
        ]
        database_ids = [
            row[0]
            for row in database.query(spark, where.jdbc, "SELECT record_id FROM crash_records")
        ]
        file_ids, on_disk = file_sink_rows(spark, where.files)
        tallies = {
            "Delta": crash.tally(input_ids, delta_ids),
            "database": crash.tally(input_ids, database_ids),
            "file sink": crash.tally(input_ids, file_ids),
        }
        for sink, counted in tallies.items():
            print(
                f"{sink}: {len(input_ids)} records in, {counted}, unexpected: {counted.unexpected}"
            )
        print(
            f"file sink: {on_disk} rows in its part files, {len(file_ids)} listed in "
            f"_spark_metadata"
        )
        assert {sink: (t.lost, t.duplicated, t.unexpected) for sink, t in tallies.items()} == {
            sink: (0, 0, 0) for sink in tallies
        }, f"{reproduce}\n{capsys.readouterr().out}"
    except Exception as error:
        error.add_note(f"kill cycles: {reproduce}")
        raise


# --- the plan and the idle check, without Spark (in the default run)
# -------------------------------


def test_a_seed_draws_the_same_kills_and_every_kind_in_the_first_cycles():
    def plan(seed: int) -> list[str]:
        rng = random.Random(seed)
        return [str(draw_kill(rng, kind, 0, 0)) for kind in draw_kinds(rng, 6)]

    assert plan(9) == plan(9) and plan(9) != plan(10)
    kinds = draw_kinds(random.Random(9), 6)
    assert sorted(kinds[: len(KINDS)]) == sorted(KINDS) and set(kinds) <= set(KINDS)


def write_log(folder: Path, name: str, *lines: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(line + "\n" for line in ("v1", *lines)))


def test_drained_needs_every_file_planned_and_committed_reading_compacted_source_logs(tmp_path):
    where = crash_child.folders(tmp_path)
    batches = where.checkpoints / "batches"
    for number in range(
        10
    ):  # one file per batch, batches 0..9; the file source writes entry 9 as 9.compact
        crash.write_records(where.input, f"part-{number:03d}.json", [])
        source = f'{{"path":"file://{where.input}/part-{number:03d}.json","timestamp":1,"batchId":{number}}}'
        write_log(
            batches / "sources" / "0", f"{number}.compact" if number == 9 else str(number), source
        )
    for number in range(9):
        write_log(batches / "offsets", str(number), "{}", f'{{"logOffset":{number}}}')
        write_log(batches / "commits", str(number), "{}")
    assert not drained(
        where
    )  # part-009 is in the source log (9.compact), but no offsets file names it yet
    write_log(batches / "offsets", "9", "{}", '{"logOffset":9}')
    assert not drained(where)  # batch 9 planned, not committed
    write_log(batches / "commits", "9", "{}")
    assert drained(where)
    crash.write_records(where.input, "part-010.json", [])
    assert not drained(where)  # a file the source has not seen
