"""The workload that trains the driver JVM's class-data archive (see tools/class_archive.py).

A JVM archives the classes it loaded, so the archive is only as good as the run that wrote
it. Left to chance, that run is whatever started first (a lesson 00 loads half of what a
Delta lesson needs). This run touches, on a few rows each, what the lessons use: the file
source and JSON parsing, windows with a watermark, the memory, parquet, console, noop and
foreachBatch sinks, Delta (append, complete, MERGE, history, time travel, its streaming
source), a stream-stream join, session windows, the RocksDB store with changelog
checkpointing, applyInPandasWithState and transformWithState, the state readers, SQLite over
JDBC and the Kafka source's planning. Measured on lesson 11 (2 cores): 34-37 CPU-seconds with
an archive written by a small run, 24-25 with one written by a Delta run (docs/BENCHMARKS.md).

    python -m tools.archive_training   # run by tools.class_archive.train(), not by hand
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.streaming.state import GroupStateTimeout
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

import tools  # noqa: F401  (puts streaming_tutorial/ on sys.path)
from common import database, parsing, paths
from common.session import get_spark
from infra.files import json_lines, write_atomically

EVENT_SCHEMA = StructType(
    [
        StructField("user", StringType()),
        StructField("page", StringType()),
        StructField("ts", TimestampType()),
    ]
)
COUNT_SCHEMA = StructType([StructField("user", StringType()), StructField("events", LongType())])
AVAILABLE_NOW = {"availableNow": True}


def write_events(folder: Path) -> None:
    start = datetime(2025, 1, 15, 10, 0, 0)
    for batch in range(3):
        rows = [
            {
                "user": f"U{n % 3}",
                "page": ("home", "cart", "buy")[n % 3],
                "ts": (start + timedelta(seconds=40 * batch + 7 * n)).isoformat() + "Z",
            }
            for n in range(6)
        ]
        write_atomically(folder, f"events-{batch}.json", json_lines(rows) + "not json\n")


def run(query) -> None:
    query.awaitTermination()
    if query.exception() is not None:
        raise query.exception()


def count_events(key, frames, state):
    """applyInPandasWithState: a running count per user."""
    total = (state.get[0] if state.exists else 0) + sum(len(frame) for frame in frames)
    state.update((total,))
    yield pd.DataFrame({"user": [key[0]], "events": [total]})


class CountPerUser(StatefulProcessor):
    """transformWithState: the same running count, in a ValueState."""

    def init(self, handle) -> None:
        self.count = handle.getValueState("count", StructType([StructField("n", LongType())]))

    def handleInputRows(self, key, rows, timerValues):
        total = (self.count.get()[0] if self.count.exists() else 0) + sum(1 for _ in rows)
        self.count.update((total,))
        yield Row(user=key[0], events=total)

    def close(self) -> None:
        pass


def main() -> None:
    spark = get_spark("class-archive-training", kafka=True, delta=True, jdbc=True, ui=False)
    print(
        f"jvm-pid: {spark._jvm.java.lang.ProcessHandle.current().pid()}", flush=True
    )  # for train()
    with tempfile.TemporaryDirectory(prefix="class-archive-training-") as scratch:
        base = Path(scratch)
        write_events(base / "in")
        lines = (
            spark.readStream.format("text")
            .option("maxFilesPerTrigger", 1)
            .load(paths.uri(base / "in"))
            .withColumn("source_file", F.col("_metadata.file_name"))
        )
        parsed = parsing.parse_json(lines, EVENT_SCHEMA)
        events = parsing.valid_records(parsed, EVENT_SCHEMA).withWatermark("ts", "30 seconds")

        def start(frame, name, sink="memory", mode="append", **options):
            writer = frame.writeStream.format(sink).outputMode(mode).trigger(**AVAILABLE_NOW)
            writer = writer.option("checkpointLocation", paths.uri(base / "cp" / name))
            if sink == "memory":
                writer = writer.queryName(name)
            for key, value in options.items():
                writer = writer.option(key, value)
            return writer.start() if sink != "delta" else writer.start(paths.uri(base / name))

        run(
            start(
                events.groupBy(F.window("ts", "30 seconds"), "page").count(),
                "windows",
                mode="update",
            )
        )
        run(
            start(
                parsing.quarantined(parsed),
                "quarantine",
                sink="parquet",
                path=str(base / "quarantine"),
            )
        )
        run(start(events.groupBy(F.session_window("ts", "20 seconds"), "user").count(), "sessions"))
        run(
            start(
                events.groupBy("page").count(), "pages", sink="console", mode="complete", numRows=1
            )
        )
        run(start(events, "events", sink="delta"))
        run(start(events.groupBy("user").count(), "totals", sink="delta", mode="complete"))
        table = spark.read.format("delta").load(paths.uri(base / "events"))
        table.groupBy("user").count().collect()
        spark.sql(f"DESCRIBE HISTORY delta.`{base / 'events'}`").collect()
        spark.read.format("delta").option("versionAsOf", 0).load(paths.uri(base / "events")).count()

        def merge_latest(batch, batch_id: int) -> None:
            from delta.tables import DeltaTable

            latest = batch.groupBy("user").agg(F.max("ts").alias("ts"))
            target = base / "latest"
            if not DeltaTable.isDeltaTable(spark, paths.uri(target)):
                latest.limit(0).write.format("delta").save(paths.uri(target))
            (
                DeltaTable.forPath(spark, paths.uri(target))
                .alias("t")
                .merge(latest.alias("s"), "t.user = s.user")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
            rows = [
                (row.user, row.n)
                for row in batch.groupBy("user").agg(F.count("*").alias("n")).collect()
            ]
            # The JDBC classes a foreachBatch write to a database loads (lesson 10's idempotent
            # write adds its claim of the batch id to the same transaction).
            with database.connect(spark, jdbc) as connection:
                for row in rows:
                    database.execute(
                        connection, "INSERT INTO visits (user_id, n) VALUES (?, ?)", row
                    )

        jdbc = database.Jdbc(f"{database.SQLITE_PREFIX}{base / 'training.db'}")
        database.create_tables(
            spark,
            jdbc,
            ["CREATE TABLE IF NOT EXISTS visits (user_id VARCHAR(16), n BIGINT)"],
        )
        run(
            spark.readStream.format("delta")
            .load(paths.uri(base / "events"))
            .writeStream.foreachBatch(merge_latest)
            .option("checkpointLocation", paths.uri(base / "cp" / "merge"))
            .trigger(**AVAILABLE_NOW)
            .start()
        )

        left = events.select("user", F.col("ts").alias("left_ts"))
        right = events.select(F.col("user").alias("buyer"), F.col("ts").alias("right_ts"))
        joined = left.join(
            right,
            F.expr("user = buyer AND right_ts BETWEEN left_ts AND left_ts + INTERVAL 1 MINUTE"),
            "leftOuter",
        )
        run(start(joined, "joined"))

        spark.conf.set(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        spark.conf.set(
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true"
        )
        run(start(events.dropDuplicatesWithinWatermark(["user", "page"]), "distinct"))
        run(
            start(
                events.groupBy("user").applyInPandasWithState(
                    count_events, COUNT_SCHEMA, "events LONG", "update", GroupStateTimeout.NoTimeout
                ),
                "pandas_state",
                mode="update",
            )
        )
        run(
            start(
                events.groupBy("user").transformWithState(
                    CountPerUser(), COUNT_SCHEMA, "Update", "None"
                ),
                "tws",
                mode="update",
            )
        )
        for reader in ("state-metadata", "statestore"):
            spark.read.format(reader).load(paths.uri(base / "cp" / "distinct")).collect()

        kafka = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", "127.0.0.1:9")
            .option("subscribe", "training")
            .load()
        )
        text = kafka.select(F.col("key").cast("string"), F.col("value").cast("string"))
        text.select(F.to_json(F.struct("value")).alias("value")).explain()
        run(start(events, "noop", sink="noop"))
    spark.stop()


if __name__ == "__main__":
    main()
