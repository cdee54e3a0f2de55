"""The survive check: run the learner's sink in a child process, kill it with SIGKILL mid-scenario
(lesson 16's harness), restart it on its checkpoint, and count what was lost or written twice.

The child reads the scenario's files (one per micro-batch), calls the learner's
``write_batch(batch_df, batch_id, target)`` in foreachBatch, and pauses where the parent asks;
the parent kills it there and starts it again. A scenario is killed twice, at two kinds of
point, then run to its end:

- ``after-sink``: the sink returned, Spark has not committed the batch, so the restart runs that
  batch again. A sink that is not idempotent writes it twice.
- ``after-write``: inside the sink, between two of its writes. The child counts the sink's
  writes (``practice.writes``) and pauses after the next to last write the previous batch made,
  or after the first when it made one. A sink that writes its data,
  then a "done" marker, is killed between the two: the restart finds no marker and writes the
  data again. One that writes the marker first is killed before its data: the restart skips it.

The child has what the exercise's hints allow: Delta included. After the last run the parent
reads the target (a Delta table when it is one) and counts by record id.
"""

from __future__ import annotations

import sys
from pathlib import Path

import lesson16_crash_harness as crash

from common import paths
from practice.observe import Batch, Observation, plain, scenario_files, scenario_inputs, sort_rows
from practice.writes import WriteCounter, counting_writes

NOT_STARTED_EXIT = 3  # the child's exit code when the learner's function still raises its TODO
ID_COLUMN = "record_id"
LABEL = "sink"
# The kills of a visible scenario, and of a hidden one: (point, batch) in the order they come.
KILLS = (("after-sink", 1), ("after-write", 2))
HIDDEN_KILLS = (("after-write", 1), ("after-sink", 2))


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The exercise's ``run``: two kills and restarts, a last run to the end, then the tally as
    facts."""
    from practice.checking import NotStarted

    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    batches = scenario_inputs(exercise, scenario)["input"]
    source = scenario_files(workdir / "input", batches, scenario)
    target = workdir / "target"
    command = [
        sys.executable,
        "-m",
        "practice.survive",
        str(exercise.check_file),
        module.__file__,
        str(source),
        str(target),
        str(workdir / "checkpoint"),
    ]
    log = workdir / "child.log"
    markers = workdir / "markers"
    env = {"PYTHONPATH": crash.python_path()}
    kills = HIDDEN_KILLS if scenario.hidden else KILLS
    for point, batch_id in kills:
        pause_at = f"{LABEL}@{point}:{batch_id}"
        with crash.child_process(command, log, markers, pause_at=pause_at, env=env) as child:
            try:
                child.wait_for_marker(point, batch_id, LABEL)
            except crash.CrashError:
                if child.process.returncode == NOT_STARTED_EXIT:
                    raise NotStarted() from None
                raise
            child.kill()
    with crash.child_process(command, log, markers, env=env) as child:
        child.wait()
    rows = read_target(spark, target)
    held = [row[ID_COLUMN] for row in rows]
    wanted = [record[ID_COLUMN] for batch in batches for record in batch]
    tally = crash.tally(wanted, held)
    facts = {"rows lost": tally.lost, "rows duplicated": tally.duplicated}
    for point, batch_id in kills:
        ids = [record[ID_COLUMN] for record in batches[batch_id]]
        of_batch = crash.tally(ids, [row_id for row_id in held if row_id in set(ids)])
        facts[kill_fact(point, batch_id, "lost")] = of_batch.lost
        facts[kill_fact(point, batch_id, "duplicated")] = of_batch.duplicated
    # The input's columns, in the input's order: a partition column the sink added (batch_id=N
    # folders) is how it stored the rows, not part of them.
    columns = list(next(record for batch in batches for record in batch))
    ordered = [plain(tuple(row.asDict().get(name) for name in columns)) for row in rows]
    return Observation(
        columns,
        [Batch(sort_rows(ordered))],
        facts=facts,
    )


WHERE = {
    "after-sink": "killed after the sink returned",
    "after-write": "killed inside the sink, between two of its writes",
}


def kill_fact(point: str, batch_id: int, what: str) -> str:
    """'rows of batch 2 (killed inside the sink, between two of its writes) duplicated'."""
    return f"rows of batch {batch_id} ({WHERE[point]}) {what}"


def damage_at(point: str, what: str):
    """A Mistake's ``when``: the batch killed at ``point`` has rows ``what`` ('lost',
    'duplicated') in the learner's target."""

    def when(mine, wanted) -> bool:
        return any(
            name.endswith(f") {what}") and WHERE[point] in name and count > 0
            for name, count in mine.facts.items()
        )

    return when


def read_target(spark, target: Path) -> list:
    """The rows the learner's sink left in ``target``: a Delta table's (its log says which files
    count), else those of every Parquet file in any folder under it (Spark's readers skip names
    that start with "_" or ".", as a job reading the folder would); none when there are none."""
    if (target / "_delta_log").is_dir():
        return spark.read.format("delta").load(paths.uri(target)).collect()
    if not any(target.rglob("*.parquet")):
        return []
    return spark.read.option("recursiveFileLookup", "true").parquet(paths.uri(target)).collect()


# --- in the child -------------------------------------------------------------------------


class KillPoints:
    """The learner's sink, with the ``after-write`` pause: after the write numbered one less than
    the previous batch's count in this process (at least the first), between a batch's data and
    what it writes after them; at the sink's end when it made no write the counter saw."""

    def __init__(self, write, target: Path) -> None:
        self.write = write
        self.batch_id = -1
        self.previous_writes = 0
        self.counter = WriteCounter(target, self.written)

    def sink(self, batch_df, batch_id: int) -> None:
        self.batch_id = batch_id
        with counting_writes(self.counter):
            self.write(batch_df, batch_id)
        if self.counter.count == 0:
            crash.pause_here("after-write", batch_id, LABEL)
        self.previous_writes = self.counter.count

    def written(self, number: int) -> None:
        if number == max(1, self.previous_writes - 1):
            crash.pause_here("after-write", self.batch_id, LABEL)


def child(check_file: str, module_file: str, source: str, target: str, checkpoint: str) -> int:
    """The child: the learner's sink in a query over ``source``, until the input is read."""
    from common.session import get_spark
    from practice.catalog import load_exercise, load_module

    exercise = load_exercise(Path(check_file))
    module = load_module(Path(module_file))
    spark = get_spark(
        "exercise-survive",
        delta=True,
        ui=False,
        extra_conf={"spark.sql.shuffle.partitions": "1"},
    )
    spark.sparkContext.setLogLevel("ERROR")

    def write(batch_df, batch_id: int) -> None:
        module.write_batch(batch_df, batch_id, target)

    kill_points = KillPoints(write, Path(target))
    query = (
        spark.readStream.schema(exercise.schemas)
        .option("maxFilesPerTrigger", 1)
        .json(paths.uri(Path(source)))
        .writeStream.foreachBatch(crash.pausable(kill_points.sink, LABEL))
        .option("checkpointLocation", paths.uri(Path(checkpoint)))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    except Exception as error:
        if "NotImplementedError" in str(error):
            return NOT_STARTED_EXIT
        raise
    return 0


if __name__ == "__main__":
    sys.exit(child(*sys.argv[1:6]))
