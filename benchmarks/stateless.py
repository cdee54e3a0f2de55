"""The stateless floor: rate at 1 row/s into a sink, trigger 0: what one micro-batch costs at least.

With one row a second and trigger 0, a batch runs as soon as a row is there, so its
``durationMs.triggerExecution`` is the engine's fixed cost per micro-batch: planning, the
offset log write before the batch (walCommit), the batch, the commit log write after it.

- ``stateless_batch_p50_ms`` / ``_p95_ms``: rate -> noop with the course's settings, and
  ``stateless_<part>_ms``: the median of each part of the batch (durationMs).
- ``stateless_default_batch_p50_ms``: the same with Spark's checkpoint file manager (the
  course writes its checkpoint files through Hadoop's FileSystem API: common/session.py).
- ``stateless_try_min_batches_to_retain_10_p50_ms`` (full run): fewer old log files kept.
- ``stateless_kafka_batch_p50_ms`` against ``stateless_kafka_async_batch_p50_ms``: rate ->
  Kafka, without and with ``asyncProgressTrackingEnabled`` (Spark allows it only with the
  Kafka sink): the offset and commit logs are written in the background, every
  ``asyncProgressTrackingCheckpointIntervalMs``, instead of inside each batch.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from pyspark.sql import functions as F

from benchmarks.harness import Results, Stats, sql_conf, stop, wait_for_batches
from common import paths
from common.session import CHECKPOINT_MANAGER_CONF, FILE_CONTEXT_CHECKPOINTS

ROWS_PER_SECOND = 1
BATCH_TIMEOUT = 30  # seconds per batch at worst (one comes every second)
PARTS = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")
TOPIC = "bench-stateless"
ASYNC = {
    "asyncProgressTrackingEnabled": "true",
    "asyncProgressTrackingCheckpointIntervalMs": "1000",
}


def start(spark, checkpoint: Path, sink: str, options: dict):
    numbers = spark.readStream.format("rate").option("rowsPerSecond", ROWS_PER_SECOND).load()
    if sink == "kafka":
        numbers = numbers.select(F.col("value").cast("string").alias("value"))
    writer = (
        numbers.writeStream.format(sink)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(processingTime="0 seconds")
    )
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer.start()


def measure(
    spark,
    checkpoint: Path,
    size,
    *,
    sink: str = "noop",
    options: dict | None = None,
    settings: dict | None = None,
) -> list[dict]:
    """The reports of ``size.samples`` micro-batches after ``size.warm_up`` dropped ones."""
    with sql_conf(spark, settings or {}):
        query = start(spark, checkpoint, sink, options or {})
    try:
        return wait_for_batches(
            query, size.warm_up + size.samples, BATCH_TIMEOUT * (size.warm_up + size.samples)
        )[size.warm_up :]
    finally:
        stop(query)


def times(batches: list[dict]) -> Stats:
    return Stats.of([batch["durationMs"]["triggerExecution"] for batch in batches])


def run(spark, results: Results, progress, workdir: Path, size, bootstrap: str) -> None:
    from infra.kafka import recreate_topics, spark_options

    with progress.step("stateless", "rate 1 row/s -> noop, trigger 0"):
        batches = measure(spark, workdir / "noop", size)
    results.put_stats("stateless_batch", times(batches))
    for part in PARTS:
        results.put(
            f"stateless_{part}_ms",
            statistics.median(batch["durationMs"].get(part, 0) for batch in batches),
        )
    with progress.step("stateless", "the same with Spark's checkpoint file manager (FileContext)"):
        default = measure(
            spark,
            workdir / "noop-file-context",
            size,
            settings={CHECKPOINT_MANAGER_CONF: FILE_CONTEXT_CHECKPOINTS},
        )
    results.put_stats("stateless_default_batch", times(default))
    if size.candidates:
        with progress.step("stateless", "+ minBatchesToRetain=10"):
            tried = measure(
                spark,
                workdir / "noop-min-batches",
                size,
                settings={"spark.sql.streaming.minBatchesToRetain": "10"},
            )
        results.put_stats("stateless_try_min_batches_to_retain_10", times(tried))
    recreate_topics(bootstrap, [TOPIC], 1)
    kafka = {**spark_options(bootstrap), "topic": TOPIC}
    with progress.step("stateless", "rate -> Kafka, progress tracked in each batch"):
        synced = measure(spark, workdir / "kafka", size, sink="kafka", options=kafka)
    results.put_stats("stateless_kafka_batch", times(synced))
    with progress.step("stateless", "rate -> Kafka, asyncProgressTrackingEnabled"):
        asynced = measure(
            spark, workdir / "kafka-async", size, sink="kafka", options={**kafka, **ASYNC}
        )
    results.put_stats("stateless_kafka_async_batch", times(asynced))
