"""End to end, Kafka -> Spark -> Kafka: micro-batches with trigger 0 against real-time mode.

The same messages feed both queries at once (as lesson 13 runs them): one input topic with
one partition, since real-time mode holds a core per Kafka partition for the whole batch
and the machine has two. Each message carries the moment it was sent; each result topic
is stamped by the broker as it writes (LogAppendTime); latency = stamp - sent time
(``lesson13_latency``). Warm-up messages until both queries have answered are left out.

Keys: ``e2e_microbatch_p50_ms`` / ``_p99_ms`` and ``e2e_realtime_p50_ms`` / ``_p99_ms``.
"""

from __future__ import annotations

from pathlib import Path

import lesson13_latency as latency
from pyspark.sql import functions as F

from benchmarks.harness import Results, Stats, stop
from common import paths
from infra.kafka import recreate_topics, spark_options

SOURCE = "bench-e2e-in"
OUTPUTS = {"realtime": "bench-e2e-realtime", "microbatch": "bench-e2e-microbatch"}
TRIGGERS = {"realtime": {"realTime": "5 seconds"}, "microbatch": {"processingTime": "0 seconds"}}
RATE = 20  # messages per second
TIMEOUT = 180


def start(spark, bootstrap: str, topic: str, checkpoint: Path, trigger: dict):
    """Parse, carry id and sent_ms, write JSON back: a stateless pipeline real-time mode runs."""
    raw = (
        spark.readStream.format("kafka")
        .options(**spark_options(bootstrap))
        .option("subscribe", SOURCE)
        .option("startingOffsets", "latest")
        .load()
    )
    message = F.from_json(
        F.col("value").cast("string"), "id INT, word STRING, sent_ms BIGINT"
    ).alias("m")
    results = raw.select(message).select("m.id", F.upper("m.word").alias("word"), "m.sent_ms")
    return (
        results.select(F.to_json(F.struct("id", "word", "sent_ms")).alias("value"))
        .writeStream.format("kafka")
        .options(**spark_options(bootstrap))
        .option("topic", topic)
        .option("checkpointLocation", paths.uri(checkpoint))
        .outputMode("update")
        .trigger(**trigger)
        .start()
    )


def run(spark, results: Results, progress, workdir: Path, size, bootstrap: str) -> None:
    recreate_topics(bootstrap, [SOURCE], 1)
    latency.create_stamped_topics(bootstrap, list(OUTPUTS.values()), fresh=True)
    queries = []
    try:
        for name, topic in OUTPUTS.items():
            queries.append(start(spark, bootstrap, topic, workdir / f"e2e-{name}", TRIGGERS[name]))
        with progress.step(
            "end to end", f"{size.e2e_messages} messages at {RATE}/s, both modes at once"
        ):
            measured = latency.measure_latency(
                bootstrap,
                SOURCE,
                OUTPUTS,
                [{"id": n, "word": "spark"} for n in range(size.e2e_messages)],
                rate=RATE,
                warm_up_record=lambda n: {"id": -n, "word": "spark"},
                timeout=TIMEOUT,
            )
    finally:
        for query in queries:
            stop(query)
    for name, values in measured.items():
        stats = Stats.of(values)
        results.put(f"e2e_{name}_p50_ms", stats.p50)
        results.put(f"e2e_{name}_p99_ms", stats.p99)
        results.put(f"e2e_{name}_p50_ms_min", stats.min)
        results.put(f"e2e_{name}_p50_ms_max", stats.max)
        results.put(f"e2e_{name}_n", stats.n)
