"""A stateful micro-batch: the course's settings against Spark's defaults, and what else lowers it.

The query: a rate source at a fixed rate into ``groupBy(key).count()``, update mode, into
the noop sink (it computes every row and writes nothing), micro-batch after micro-batch.
A batch's time is its ``durationMs.triggerExecution``. Every run gets its own checkpoint:
shuffle partitions and the state store provider are fixed in a query's checkpoint when it
first runs.

- ``stateful_batch_p50_ms``: the course's settings (``common.session.get_spark`` as it is).
- ``stateful_default_over_tuned``: the same query with Spark's own defaults, p50 over p50.
- ``stateful_try_<setting>_p50_ms``: the course's settings plus one candidate each, then
  ``stateful_course_again_p50_ms``: the course's settings measured once more after them.
- ``stateful_partitions_<n>_p50_ms``: the course's settings at other shuffle partitions
  (the curve in docs/stateful_partitions.png).

The course's settings that matter here (common/session.py): shuffle partitions = cores, and
checkpoint files written through Hadoop's FileSystem API (checkpointFileManagerClass).
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import functions as F

from benchmarks.harness import (
    CHANGELOG_CONF,
    HDFS_PROVIDER,
    PROVIDER_CONF,
    ROCKSDB_PROVIDER,
    Results,
    Stats,
    batch_times,
    sql_conf,
    stop,
)
from common import paths
from common.session import CHECKPOINT_MANAGER_CONF, FILE_CONTEXT_CHECKPOINTS

ROWS_PER_SECOND = 1000  # the rate source's fixed pace
KEYS = 100  # distinct groups: a few per partition, as in a small dashboard
PARTITIONS_CONF = "spark.sql.shuffle.partitions"
NO_DATA_BATCHES_CONF = "spark.sql.streaming.noDataMicroBatches.enabled"
MIN_BATCHES_CONF = "spark.sql.streaming.minBatchesToRetain"
MAINTENANCE_CONF = "spark.sql.streaming.stateStore.maintenanceInterval"
# Spark's own values for every setting the course changes or tries; set explicitly, so the
# "defaults" side stays Spark's whatever common/session.py makes the course's default.
SPARK_DEFAULTS = {
    PARTITIONS_CONF: "200",
    PROVIDER_CONF: HDFS_PROVIDER,
    CHANGELOG_CONF: "false",
    NO_DATA_BATCHES_CONF: "true",
    MIN_BATCHES_CONF: "100",
    MAINTENANCE_CONF: "60s",
    CHECKPOINT_MANAGER_CONF: FILE_CONTEXT_CHECKPOINTS,
}
# One candidate at a time on top of the course's settings.
CANDIDATES = {
    "rocksdb": {PROVIDER_CONF: ROCKSDB_PROVIDER},
    "rocksdb_changelog": {PROVIDER_CONF: ROCKSDB_PROVIDER, CHANGELOG_CONF: "true"},
    "min_batches_to_retain_10": {MIN_BATCHES_CONF: "10"},
    "maintenance_600s": {MAINTENANCE_CONF: "600s"},
    "no_data_batches_off": {NO_DATA_BATCHES_CONF: "false"},
}
BATCH_TIMEOUT = 120  # seconds per micro-batch at worst (200 partitions on a busy machine)


def measure(spark, checkpoint: Path, settings: dict, warm_up: int, measured: int) -> list[float]:
    """Batch times (ms) of the query started under ``settings`` (SQL confs), warm-up dropped."""
    with sql_conf(spark, settings):
        numbers = spark.readStream.format("rate").option("rowsPerSecond", ROWS_PER_SECOND).load()
        counts = numbers.groupBy((F.col("value") % KEYS).alias("key")).count()
        query = (
            counts.writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", paths.uri(checkpoint))
            .start()
        )
    try:
        return batch_times(query, warm_up, measured, timeout=BATCH_TIMEOUT * (warm_up + measured))
    finally:
        stop(query)


def run(spark, results: Results, progress, workdir: Path, size) -> None:
    with progress.step("stateful", "warming the JVM up (not recorded)"):
        # The first query of a JVM runs on code not compiled yet: it would handicap whichever
        # side came first.
        measure(spark, workdir / "jvm-warm-up", {}, 0, size.warm_up + 2)
    with progress.step("stateful", "course settings"):
        tuned = Stats.of(measure(spark, workdir / "tuned", {}, size.warm_up, size.samples))
    results.put_stats("stateful_batch", tuned)
    defaults = {**SPARK_DEFAULTS, PARTITIONS_CONF: str(size.default_partitions)}
    with progress.step(
        "stateful", f"Spark's defaults ({size.default_partitions} shuffle partitions)"
    ):
        default = Stats.of(
            measure(spark, workdir / "defaults", defaults, size.warm_up, size.samples)
        )
    results.put_stats("stateful_default_batch", default)
    results.put("stateful_default_partitions", size.default_partitions)
    results.put("stateful_default_over_tuned", default.p50 / tuned.p50)
    # The course's own count is a point of the partitions curve (the curve's other points
    # change only the partitions, so Spark's 200 with the course's other settings is there too).
    results.put_stats(f"stateful_partitions_{spark.conf.get(PARTITIONS_CONF)}", tuned)
    for name, settings in CANDIDATES.items() if size.candidates else ():
        with progress.step("stateful", f"course settings + {name}"):
            tried = Stats.of(
                measure(spark, workdir / f"try-{name}", settings, size.warm_up, size.samples)
            )
        results.put_stats(f"stateful_try_{name}", tried)
    if size.candidates:
        # The course's side once more, after the candidates: a full run on 2 cores measured every
        # candidate 10-45% under the course's first measurement, with or without a setting that
        # cannot matter here (no-data batches: the rate source always has data). Compare each
        # candidate with this one too.
        with progress.step("stateful", "course settings again"):
            again = Stats.of(
                measure(spark, workdir / "tuned-again", {}, size.warm_up, size.samples)
            )
        results.put_stats("stateful_course_again", again)
    partitions_curve(
        spark, results, progress, workdir, size.partitions_curve, size.warm_up, size.samples
    )


def partitions_curve(
    spark,
    results: Results,
    progress,
    workdir: Path,
    partitions: list[int],
    warm_up: int,
    samples: int,
) -> dict[int, Stats]:
    """The course's settings at each shuffle partition count: stateful_partitions_<n>_p50_ms."""
    curve = {}
    for count in partitions:
        with progress.step("stateful", f"{count} shuffle partitions"):
            curve[count] = Stats.of(
                measure(
                    spark,
                    workdir / f"partitions-{count}",
                    {PARTITIONS_CONF: str(count)},
                    warm_up,
                    samples,
                )
            )
        results.put_stats(f"stateful_partitions_{count}", curve[count])
    return curve
