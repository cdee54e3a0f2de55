"""The survive check: run the learner's sink in a child process, kill it with SIGKILL mid-scenario
(lesson 16's harness), restart it on its checkpoint, and count what was lost or written twice.

The child reads the scenario's files (one per micro-batch), calls the learner's
``write_batch(batch_df, batch_id, target)`` in foreachBatch, and pauses at the point the
exercise names (``after-sink`` of batch 1: the sink has written, Spark has not committed the
batch, so the restart runs batch 1 again). The parent kills it there, starts it again with no
pause, lets it finish (availableNow), then reads the target and counts by record id.
"""

from __future__ import annotations

import sys
from pathlib import Path

import lesson16_crash_harness as crash

from common import paths
from practice.observe import Batch, Observation, plain, scenario_inputs, sort_rows
from teaching.microbatch import write_batches

NOT_STARTED_EXIT = 3  # the child's exit code when the learner's function still raises its TODO
KILL_AT = "sink@after-sink:1"  # after the sink wrote batch 1, before Spark committed it
ID_COLUMN = "record_id"


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The exercise's ``run``: one kill and one restart, then the tally as facts."""
    from practice.checking import NotStarted

    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    batches = scenario_inputs(exercise, scenario)["input"]
    source = write_batches(workdir / "input", batches)
    target = workdir / "target"
    checkpoint = workdir / "checkpoint"
    command = [
        sys.executable,
        "-m",
        "practice.survive",
        str(exercise.check_file),
        module.__file__,
        str(source),
        str(target),
        str(checkpoint),
    ]
    log = workdir / "child.log"
    markers = workdir / "markers"
    env = {"PYTHONPATH": str(paths.LESSONS_DIR)}
    with crash.child_process(command, log, markers, pause_at=KILL_AT, env=env) as child:
        try:
            child.wait_for_marker("after-sink", 1, "sink")
        except crash.CrashError:
            if child.process.returncode == NOT_STARTED_EXIT:
                raise NotStarted() from None
            raise
        child.kill()
    with crash.child_process(command, log, markers, env=env) as child:
        child.wait()
    rows = spark.read.parquet(paths.uri(target)).collect() if target.exists() else []
    wanted = [record[ID_COLUMN] for batch in batches for record in batch]
    tally = crash.tally(wanted, [row[ID_COLUMN] for row in rows])
    # The input's columns, in the input's order: a partition column the sink added (batch_id=N
    # folders) is how it stored the rows, not part of them.
    columns = list(next(record for batch in batches for record in batch))
    ordered = [plain(tuple(row.asDict().get(name) for name in columns)) for row in rows]
    return Observation(
        columns,
        [Batch(sort_rows(ordered))],
        facts={"rows lost": tally.lost, "rows duplicated": tally.duplicated},
    )


def child(check_file: str, module_file: str, source: str, target: str, checkpoint: str) -> int:
    """The child: the learner's sink in a query over ``source``, until the input is read."""
    from common.session import get_spark
    from practice.catalog import load_exercise, load_module

    exercise = load_exercise(Path(check_file))
    module = load_module(Path(module_file))
    spark = get_spark(
        "exercise-survive", ui=False, extra_conf={"spark.sql.shuffle.partitions": "1"}
    )
    spark.sparkContext.setLogLevel("ERROR")

    def write(batch_df, batch_id: int) -> None:
        module.write_batch(batch_df, batch_id, target)

    query = (
        spark.readStream.schema(exercise.schemas)
        .option("maxFilesPerTrigger", 1)
        .json(paths.uri(Path(source)))
        .writeStream.foreachBatch(crash.pausable(write, "sink"))
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
