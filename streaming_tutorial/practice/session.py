"""The one SparkSession the exercise commands keep warm (watch mode checks on every save)."""

from __future__ import annotations

from pathlib import Path

from common.paths import RUNTIME_DIR

WORK_DIR = RUNTIME_DIR / "exercises"  # each check's input files and checkpoints


def exercise_session():
    """A local session with Delta (the foreachBatch exercises write Delta tables).

    One shuffle partition: a scenario has a handful of rows, and every stateful operator keeps a
    state store per partition, so one partition makes each micro-batch cheaper.
    """
    from common.session import get_spark

    return get_spark(
        "course-exercises",
        delta=True,
        ui=False,
        extra_conf={"spark.sql.shuffle.partitions": "1"},
    )


def workdir_for(exercise_id: str, root: Path = WORK_DIR) -> Path:
    return root / exercise_id.replace(".", "_")
