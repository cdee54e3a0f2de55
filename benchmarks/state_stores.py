"""State stores by size: HDFS-backed (Spark's default) against RocksDB with changelog checkpointing.

For each size (10k, 100k, 1M keys) the input is a folder of Parquet files read one per
micro-batch: the first file holds every key once (it fills the state), each later file
updates ``UPDATES_PER_BATCH`` of them. A batch's time is that of an update batch (the
filling batch and one more are warm-up); memory is the state operator's
``memoryUsedBytes`` as the store reports it (HDFS: its in-memory maps; RocksDB: the
native memory of its block cache and memtables, off the JVM heap).

Keys: ``state_store_<hdfs|rocksdb>_<10k|100k|1m>_batch_ms`` (median; _min, _max beside it)
and ``..._memory_mb``.
"""

from __future__ import annotations

import os
import shutil
import statistics
from pathlib import Path

from pyspark.sql import functions as F

from benchmarks.harness import (
    CHANGELOG_CONF,
    HDFS_PROVIDER,
    PROVIDER_CONF,
    ROCKSDB_PROVIDER,
    Results,
    Stats,
    sql_conf,
    stop,
    wait_for_batches,
)
from common import paths

UPDATES_PER_BATCH = 1000
PROVIDERS = {
    "hdfs": {PROVIDER_CONF: HDFS_PROVIDER},
    "rocksdb": {PROVIDER_CONF: ROCKSDB_PROVIDER, CHANGELOG_CONF: "true"},
}
TIERS = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
BATCH_TIMEOUT = 300  # seconds per batch at worst (filling 1M keys on a busy machine)


def write_input(spark, folder: Path, keys: int, updates: int, files: int) -> Path:
    """``files`` Parquet files, oldest first: every key once, then ``updates`` keys per file."""
    staging = folder.with_name(folder.name + "-staging")
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        start, count = (0, keys) if number == 0 else ((number * 7919 * updates) % keys, updates)
        rows = spark.range(start, start + count).select((F.col("id") % keys).alias("key"))
        rows.coalesce(1).write.mode("overwrite").parquet(paths.uri(staging))
        part = next(staging.glob("part-*.parquet"))
        target = folder / f"{number:05d}.parquet"
        shutil.move(str(part), target)
        os.utime(
            target, (1_700_000_000 + number, 1_700_000_000 + number)
        )  # the file source reads oldest first
    shutil.rmtree(staging, ignore_errors=True)
    return folder


def measure(
    spark, folder: Path, checkpoint: Path, settings: dict, warm_up: int, samples: int
) -> tuple[Stats, float]:
    """(update batch times in ms, median memoryUsedBytes in MB) of one provider over one input."""
    with sql_conf(spark, settings):
        keys = (
            spark.readStream.schema("key LONG")
            .option("maxFilesPerTrigger", 1)
            .parquet(paths.uri(folder))
        )
        counts = keys.groupBy("key").count()
        query = (
            counts.writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", paths.uri(checkpoint))
            .start()
        )
    try:
        batches = wait_for_batches(query, warm_up + samples, BATCH_TIMEOUT * (warm_up + samples))[
            warm_up:
        ]
    finally:
        stop(query)
    memory = (
        statistics.median(batch["stateOperators"][0]["memoryUsedBytes"] for batch in batches)
        / 2**20
    )
    return Stats.of([batch["durationMs"]["triggerExecution"] for batch in batches]), memory


def run(spark, results: Results, progress, workdir: Path, size) -> dict[str, dict[int, float]]:
    """Every provider at every size; {provider: {keys: median batch ms}} for the plot."""
    curve: dict[str, dict[int, float]] = {name: {} for name in PROVIDERS}
    for tier, keys in TIERS.items():
        keys = min(
            keys, size.max_state_keys
        )  # --quick and --tiny: smaller states (the keys say how many)
        results.put(f"state_store_{tier}_keys", keys)
        folder = write_input(
            spark,
            workdir / f"state-{tier}",
            keys,
            min(UPDATES_PER_BATCH, keys),
            1 + size.warm_up + size.samples,
        )
        for name, settings in PROVIDERS.items():
            with progress.step("state stores", f"{name}, {keys:,} keys"):
                stats, memory = measure(
                    spark,
                    folder,
                    workdir / f"state-{tier}-{name}",
                    settings,
                    1 + size.warm_up,
                    size.samples,
                )  # 1: the batch that fills the state
            results.put_median(f"state_store_{name}_{tier}_batch_ms", stats)
            results.put(f"state_store_{name}_{tier}_memory_mb", memory)
            curve[name][keys] = stats.p50
    return curve
