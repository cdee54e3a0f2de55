"""Throughput ceilings on this machine: JSON files -> Delta, Kafka -> Delta, rate -> noop.

Each source is read in equal micro-batches (a file per core, ``maxOffsetsPerTrigger`` messages, or
``rowsPerBatch`` rows per batch); a batch's rate is its input rows over its
``durationMs.triggerExecution``; the figure is the median over the batches after warm-up.

- ``files_to_delta_rows_per_s``: JSON lines (a shop event each) parsed into a Delta table.
- ``kafka_to_delta_rows_per_s``: the same events from a Kafka topic, parsed into a Delta table.
- ``rate_to_noop_rows_per_s``: the rate-micro-batch source into noop: the engine's own ceiling.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import functions as F

from benchmarks.harness import Results, Stats, stop, wait_for_batches
from benchmarks.kafka_producer import confluent_rate, messages
from common import paths
from infra.kafka import recreate_topics, spark_options

TOPIC = "bench-throughput"
SCHEMA = (
    "event_id STRING, user_id STRING, event_type STRING, product_id STRING, price DOUBLE, "
    "ts TIMESTAMP"
)
BATCH_TIMEOUT = 120


def rates(query, warm_up: int, samples: int) -> Stats:
    try:
        batches = wait_for_batches(query, warm_up + samples, BATCH_TIMEOUT * (warm_up + samples))[
            warm_up:
        ]
    finally:
        stop(query)
    return Stats.of(
        [
            batch["numInputRows"] * 1000 / max(batch["durationMs"]["triggerExecution"], 1)
            for batch in batches
        ]
    )


def to_delta(events, table: Path, checkpoint: Path):
    return (
        events.writeStream.format("delta")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(processingTime="0 seconds")
        .start(paths.uri(table))
    )


def files_to_delta(spark, workdir: Path, size) -> Stats:
    folder = workdir / "json-in"
    folder.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    lines = [value.decode() for _, value in messages(size.rows_per_file // cores)]
    for number in range((size.warm_up + size.samples) * cores):  # a file per core in each batch
        (folder / f"{number:05d}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    events = (
        spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", cores).json(paths.uri(folder))
    )
    return rates(
        to_delta(events, workdir / "json-delta", workdir / "json-delta-chk"),
        size.warm_up,
        size.samples,
    )


def kafka_to_delta(
    spark, workdir: Path, size, bootstrap: str, options: dict | None = None
) -> Stats:
    recreate_topics(bootstrap, [TOPIC], os.cpu_count() or 1)  # a partition per core: one task each
    batches = size.warm_up + size.samples
    confluent_rate(
        bootstrap, TOPIC, messages(size.rows_per_file * batches)
    )  # the fast client fills it
    reader = (
        spark.readStream.format("kafka")
        .options(**spark_options(bootstrap))
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", size.rows_per_file)
    )
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    raw = reader.load()
    events = raw.select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("e")).select("e.*")
    return rates(
        to_delta(events, workdir / "kafka-delta", workdir / "kafka-delta-chk"),
        size.warm_up,
        size.samples,
    )


def rate_to_noop(spark, workdir: Path, size) -> Stats:
    numbers = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", size.rate_rows_per_batch)
        .load()
    )
    query = (
        numbers.writeStream.format("noop")
        .option("checkpointLocation", paths.uri(workdir / "rate-noop"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    return rates(query, size.warm_up, size.samples)


def run(spark, results: Results, progress, workdir: Path, size, bootstrap: str) -> None:
    with progress.step("throughput", f"JSON files -> Delta, {size.rows_per_file:,} rows a batch"):
        results.put_median("files_to_delta_rows_per_s", files_to_delta(spark, workdir, size))
    with progress.step("throughput", f"Kafka -> Delta, {size.rows_per_file:,} rows a batch"):
        results.put_median(
            "kafka_to_delta_rows_per_s", kafka_to_delta(spark, workdir, size, bootstrap)
        )
    with progress.step("throughput", f"rate -> noop, {size.rate_rows_per_batch:,} rows a batch"):
        results.put_median("rate_to_noop_rows_per_s", rate_to_noop(spark, workdir, size))
