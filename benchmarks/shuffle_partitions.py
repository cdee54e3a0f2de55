"""Measure how spark.sql.shuffle.partitions changes a stateful micro-batch on this machine.

The course's session helper sets shuffle partitions to the number of cores. This
benchmark shows why: it runs the same stateful query (a windowed count with a
watermark, like lesson 07) over the same small input with the Spark default (200)
and with the number of cores, and reports the median micro-batch time.

Run
  .venv/bin/python benchmarks/shuffle_partitions.py            # 8 batches per setting
  .venv/bin/python benchmarks/shuffle_partitions.py --batches 20 --partitions 200 8 2

Results are recorded in docs/BENCHMARKS.md. Timings belong here, not in tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "streaming_tutorial"))

from pyspark.sql import functions as F  # noqa: E402

from common.config import BASE_EVENT_TIME  # noqa: E402
from common.microbatch import collect_batches, stream_batches, write_batches  # noqa: E402
from common.schemas import SENSOR_SCHEMA  # noqa: E402
from common.session import get_spark  # noqa: E402
from common.timestamps import iso  # noqa: E402

READINGS_PER_BATCH = 50
SENSORS = 5
BATCHES_TIMEOUT = 1800  # seconds for one setting's whole run


def make_batches(batches: int) -> list[list[dict]]:
    """Sensor readings, one second apart, spread over a few 10-second windows per batch."""
    out = []
    for b in range(batches):
        out.append(
            [
                {
                    "reading_id": b * READINGS_PER_BATCH + i,
                    "sensor_id": f"SENSOR-{i % SENSORS}",
                    "temperature": 20.0 + i % 7,
                    "humidity": 40.0,
                    "event_time": iso(BASE_EVENT_TIME + timedelta(seconds=b * READINGS_PER_BATCH + i)),
                }
                for i in range(READINGS_PER_BATCH)
            ]
        )
    return out


def measure(spark, partitions: int, batches: int, workdir: Path) -> list[int]:
    """Batch durations (ms) of one run with the given shuffle partitions; batch 0 is warm-up."""
    # The partition count is fixed in a query's checkpoint when it first runs, so
    # every setting gets its own checkpoint.
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    source = workdir / f"in-{partitions}"
    write_batches(source, make_batches(batches))
    windowed = (
        stream_batches(spark, source, SENSOR_SCHEMA)
        .withWatermark("event_time", "10 seconds")
        .groupBy(F.window("event_time", "10 seconds"), "sensor_id")
        .agg(F.count("*").alias("readings"), F.avg("temperature").alias("avg_temp"))
    )
    # 200 partitions on a busy 2-core machine can take minutes: allow it, it is the point.
    run = collect_batches(windowed, workdir / f"chk-{partitions}", output_mode="append", timeout=BATCHES_TIMEOUT)
    return [p["durationMs"]["triggerExecution"] for p in run.progress if p["numInputRows"] > 0][1:]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=8, help="micro-batches per setting (default: %(default)s)")
    parser.add_argument(
        "--partitions", type=int, nargs="+", default=[200, os.cpu_count() or 2], help="settings to compare"
    )
    args = parser.parse_args(argv)
    spark = get_spark("benchmark-shuffle-partitions", ui=False)
    print(f"cores: {os.cpu_count()}, batches per setting: {args.batches}, "
          f"{READINGS_PER_BATCH} readings per batch, windowed count with watermark")
    print(f"{'shuffle partitions':>18} | {'median batch ms':>15} | {'min':>6} | {'max':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for partitions in args.partitions:
            durations = measure(spark, partitions, args.batches, Path(tmp))
            print(f"{partitions:>18} | {statistics.median(durations):>15.0f} | {min(durations):>6} | {max(durations):>6}")
    spark.stop()


if __name__ == "__main__":
    main()
