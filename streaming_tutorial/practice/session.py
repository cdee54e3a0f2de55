"""The one SparkSession the exercise commands keep warm (watch mode checks on every save)."""

from __future__ import annotations

import atexit
import contextlib
from pathlib import Path

from common.paths import RUNTIME_DIR

WORK_DIR = RUNTIME_DIR / "exercises"  # each check's input files and checkpoints

# The Kafka broker the checks write to, found or started once per process (exercise_kafka).
_KAFKA = contextlib.ExitStack()
atexit.register(_KAFKA.close)
_bootstrap: str | None = None


def exercise_session():
    """A local session with Delta (the foreachBatch exercises write Delta tables) and the Kafka
    connector (08.2 writes with the Kafka sink, 13.2 reads and writes Kafka in real-time mode):
    every check runs in this one session, watch mode's included.

    The connector costs nothing measurable at start: 2.6-3.3 s until the session exists with it
    or without it, on 2 cores (docs/PERFORMANCE.md), since get_spark hands Spark the jar files Ivy
    resolved once. A jar not in Ivy's cache yet (~/.ivy2.5.2: a learner who ran no Kafka lesson)
    needs Maven Central once; offline, get_spark's CourseError names the packages, and the
    exercises' commands print it (practice/cli.py).

    One shuffle partition: a scenario has a handful of rows, and every stateful operator keeps a
    state store per partition, so one partition makes each micro-batch cheaper.
    """
    from common.session import get_spark

    return get_spark(
        "course-exercises",
        delta=True,
        kafka=True,
        ui=False,
        extra_conf={"spark.sql.shuffle.partitions": "1"},
    )


def exercise_kafka() -> str:
    """The bootstrap servers of the broker the Kafka exercises' checks use (08.2, 13.2), kept
    like the session: found or started once (kafka_for_lesson: KAFKA_BOOTSTRAP_SERVERS, a broker
    already running, or the course's own), then shared by every scenario of a check and every
    save in watch mode. A broker started here stops when the process ends (2.5 s to start and
    stop on 2 cores, once instead of once per scenario); one that stopped meanwhile is looked
    for again."""
    from infra.kafka import answers
    from infra.kafka_broker import kafka_for_lesson

    global _bootstrap
    if _bootstrap is None or not answers(_bootstrap):
        _KAFKA.close()
        _bootstrap = _KAFKA.enter_context(kafka_for_lesson(quiet=True))
    return _bootstrap


def workdir_for(exercise_id: str, root: Path = WORK_DIR) -> Path:
    return root / exercise_id.replace(".", "_")
