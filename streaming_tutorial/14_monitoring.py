"""14 · Monitoring: what is my query doing, how far behind is it, and why did it stop?

What you'll learn
  - The query's own view: ``query.status``, ``lastProgress``, ``recentProgress`` and
    ``spark.streams.active``; the progress fields that matter (durationMs, input vs processed
    rows per second, eventTime.watermark, stateOperators, a Kafka source's lag and offsets).
  - A Python ``StreamingQueryListener`` that prints one line per micro-batch and flags a batch
    slower than its trigger and a lag that keeps growing; ``onQueryIdle`` when no data comes.
  - A failing query: ``StreamingQueryException`` from ``awaitTermination``, ``query.exception()``
    and what the listener's ``onQueryTerminated`` received.
  - The Spark UI's Structured Streaming tab, event logs and the history server after the run,
    and Prometheus metrics (``spark.sql.streaming.metricsEnabled``) for a monitoring system.

Run
  python streaming_tutorial/14_monitoring.py                   # about a minute; starts what it needs
  python streaming_tutorial/14_monitoring.py --duration 300    # five minutes to look at the Spark UI
  It starts the course's Kafka broker when none runs, and a producer that sends sensor readings
  faster than the query may read them (maxOffsetsPerTrigger), so the lag grows, then shrinks.
  To run the producer yourself: --no-simulator, and in a second terminal:
    python data_generators/kafka_producer.py --kind sensor --topic monitoring-readings --count 160 --rate 20

What you'll see
  (a second run, without --reset; times, rates and the lag vary from run to run)
  Checkpoints in checkpoints/14_monitoring: resuming quarantine after batch 23, stats after batch 25.
  ...
  [listener] onQueryStarted: sensor_stats at 2026-11-23T09:22:33.202Z
    query         batch  rows   in/s    done/s   batch ms  state rows  watermark  lag    flags
  Meanwhile, see the Spark UI's Structured Streaming tab: http://127.0.0.1:4040/StreamingQuery/
  ...
    sensor_stats  26     9      13.0    3.4      2664      11          09:17:18   0      SLOW: 2664 ms > trigger 2000 ms
    sensor_stats  27     15     5.6     20.9     719       9           09:22:30   25
    sensor_stats  28     15     11.4    14.9     1008      9           09:22:46   33
    sensor_stats  29     15     7.5     17.6     852       11          09:22:58   48     LAG GROWING for 3 batches
    sensor_stats  30     15     7.5     12.6     1191      10          09:23:16   59     LAG GROWING for 3 batches
    sensor_stats  31     15     7.5     19.8     759       7           09:23:30   49
    ...
    sensor_stats  36     16     8.0     22.2     721       9           09:24:46   0
    sensor_stats  37     0      0.0     0.0      762       6           09:24:59   0
  [listener] onQueryIdle: sensor_stats found no new data (trigger at 2026-11-23T09:23:00.000Z)
  ...
  Saved output/14_monitoring/progress.png: batch duration, rows per second and Kafka lag per micro-batch.
  ...
  lastProgress: batch 38, an idle report
  the last batch that read rows, 36: durationMs {'addBatch': 463, 'commitOffsets': 43, 'getBatch': 3, ...
  numInputRows 16: arriving 8.0/s, processed 22.2/s
  ...
  stateOperators[0]: numRowsTotal 9, memoryUsedBytes 4792, numRowsDroppedByWatermark 1
  offsets behind latest: avg 0, max 0; endOffset {'monitoring-readings': {'0': 312, '1': 168}}; ...
  ...
  3. A query that fails
  ...
  query.exception(): [MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected ...
  onQueryTerminated received: exception org.apache.spark.SparkException: [MALFORMED_RECORD_IN_PARSING...
    errorClassOnException MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION
  ...
  http://127.0.0.1:4040/metrics/prometheus, as last fetched while the query ran: 12 streaming gauges
  ...
    metrics_streaming_course_driver_spark_streaming_sensor_stats_latency_Value{type="gauges"} 15   <- last ...
  ...
"""

from pathlib import Path

import lesson14_listeners as listeners
import lesson14_metrics as metrics
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths, storage
from common.parsing import (
    kafka_text,
    parse_json,
    quarantined,
    read_kafka,
    start_quarantine,
    valid_records,
)
from common.schemas import SENSOR_SCHEMA
from infra import cli, files
from infra.kafka import ensure_topics, explain_failures, recreate_topics
from infra.kafka_broker import kafka_for_lesson
from infra.runner import (
    banner,
    checkpoint_root,
    lesson_session,
    pick_trigger,
    run_lesson,
    run_queries,
    say,
)
from infra.simulators import simulator_for_lesson
from teaching import narration, progress

LESSON = "14_monitoring"
DEFAULT_DURATION = 40  # seconds: the producer's 8-12 s, the query catching up, then idle reports
TOPIC, PARTITIONS = "monitoring-readings", 2
# 160 readings at 20 per second; the query reads at most 16 per 2 s micro-batch (8 per
# second), so the lag grows while the producer sends and shrinks once it is done.
PRODUCER_ARGS = [
    "--kind",
    "sensor",
    "--topic",
    TOPIC,
    "--count",
    "160",
    "--rate",
    "20",
    "--partitions",
    str(PARTITIONS),
]
TRIGGER_INTERVAL, TRIGGER_MS = "2 seconds", 2000
MAX_OFFSETS_PER_TRIGGER = 16
WINDOW, WATERMARK_DELAY = "10 seconds", "10 seconds"
STATS_QUERY, STRICT_QUERY = "sensor_stats", "strict_reader"
# Given when the session is created: Prometheus metrics and the event log are read only then (spark.conf.set
# is too late); onQueryIdle after 3 s without new data, not 10 s, would also take spark.conf.set before start().
EVENT_LOGS = paths.OUTPUT_DIR / "spark-events"  # every run's event log; --reset keeps it
METRICS_NAMESPACE = "streaming_course"  # the metrics' prefix; Spark's default is the application id
SESSION_CONF = {
    **metrics.prometheus_conf(METRICS_NAMESPACE),
    **metrics.event_log_conf(EVENT_LOGS),
    "spark.sql.streaming.noDataProgressEventInterval": "3s",
}


def read_readings(
    spark,
    bootstrap: str,
    topic: str = TOPIC,
    *,
    max_offsets_per_trigger: int = MAX_OFFSETS_PER_TRIGGER,
) -> DataFrame:
    """The topic's sensor readings, parsed, with a quarantine reason for the ones that do not parse."""
    return parse_json(
        kafka_text(
            read_kafka(spark, bootstrap, topic, max_offsets_per_trigger=max_offsets_per_trigger)
        ),
        SENSOR_SCHEMA,
    )


def build_sensor_stats(readings: DataFrame) -> DataFrame:
    """Readings and mean temperature per sensor per 10 s window: a stateful query, so the
    progress has a watermark and state operators to watch."""
    # observe() counts each micro-batch's messages as they pass, at no extra query: the progress
    # (and so the listener) gets them in observedMetrics["input"]. A metric of your own to watch.
    observed = readings.observe(
        "input",
        F.count(F.lit(1)).alias("messages"),
        F.count("quarantine_reason").alias("unparseable"),
    )
    return (
        valid_records(observed, SENSOR_SCHEMA)
        .withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.window("event_time", WINDOW).alias("window"), "sensor_id")
        .agg(
            F.count("*").alias("readings"),
            F.round(F.avg("temperature"), 2).alias("mean_temperature"),
        )
    )


def start_stats(stats: DataFrame, output: Path, checkpoint: Path, trigger: dict):
    # queryName names the query everywhere you monitor it: the listener, the UI, the metrics.
    return (
        stats.writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(output))
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName(STATS_QUERY)
        .trigger(**trigger)
        .start()
    )


def start_queries(spark, bootstrap: str, args) -> list:
    """The stats to JSON files; a message that does not parse to the quarantine with its reason."""
    checkpoints, trigger = checkpoint_root(LESSON, args), pick_trigger(args, TRIGGER_INTERVAL)
    readings = read_readings(spark, bootstrap)
    return [
        start_stats(
            build_sensor_stats(readings),
            paths.output_for(LESSON, "stats"),
            checkpoints / "stats",
            trigger,
        ),
        start_quarantine(
            quarantined(readings, "source_partition", "source_offset"),
            paths.output_for(LESSON, "quarantine"),
            checkpoints / "quarantine",
            trigger,
            name="sensor_quarantine",
        ),
    ]


def write_broken_input(folder: Path) -> Path:
    """A file with one good reading and one line cut in half, as a crashed writer leaves it."""
    good = (
        '{"reading_id":1,"sensor_id":"sensor-0","temperature":21.5,"humidity":40.0,'
        '"event_time":"2025-01-15T10:30:00.000Z"}'
    )
    storage.require_local_input(
        "The broken-input demo", folder
    )  # Spark must read what Python writes here
    files.write_atomically(folder, "readings.json", f"{good}\n{good[:30]}\n")
    return folder


def start_strict(spark, folder: Path):
    """A query that must fail: a FAILFAST parse turns the first line that does not parse into an error."""
    parsed = spark.readStream.text(paths.uri(folder)).select(
        F.from_json("value", SENSOR_SCHEMA, {"mode": "FAILFAST"})
    )
    return (
        parsed.writeStream.format("noop").queryName(STRICT_QUERY).trigger(availableNow=True).start()
    )


def parse_kafka_source(source: dict) -> str:
    """A Kafka source's lag and offsets: its metrics are strings, its offsets JSON text."""
    lag = {name: float(value) for name, value in source["metrics"].items()}  # '17.5' -> 17.5
    end, latest = listeners.offsets(source["endOffset"]), listeners.offsets(source["latestOffset"])
    return (
        f"offsets behind latest: avg {lag['avgOffsetsBehindLatest']:g}, max "
        f"{lag['maxOffsetsBehindLatest']:g}; endOffset {end}; latestOffset {latest}"
    )


def start_listener(spark) -> listeners.ProgressPrinter:
    """One line per micro-batch of the lesson's queries, flags for a slow batch and a growing lag."""
    listener = listeners.ProgressPrinter(trigger_ms=TRIGGER_MS, watch={STATS_QUERY, STRICT_QUERY})
    spark.streams.addListener(listener)  # before start(): it sees every query's start too
    return listener


def parse_progress(query, snapshot: metrics.Snapshot) -> list[str]:
    """The query's own view: status and streams.active (looked at while it ran), lastProgress
    (maybe an idle report), and the last micro-batch that read rows."""
    last, read = (
        query.lastProgress,
        [r for r in progress.batches_run(query.recentProgress) if r["numInputRows"]],
    )
    idle = (
        "addBatch" not in last["durationMs"]
    )  # an idle report times only the look for new offsets
    return [
        f"While it ran: spark.streams.active {snapshot.active}",
        f"  query.status {snapshot.status}",
        f"lastProgress: batch {last['batchId']}, {'an idle report' if idle else 'a batch that ran'}",
        *(parse_report(read[-1]) if read else ["no micro-batch read rows: no new data this run"]),
    ]


def parse_report(report: dict) -> list[str]:
    """The fields of one progress report that answer "what is my query doing?"."""
    operator = (report.get("stateOperators") or [{}])[0]
    return [
        f"the last batch that read rows, {report['batchId']}: durationMs {report['durationMs']}",
        f"numInputRows {report['numInputRows']}: arriving {report['inputRowsPerSecond']:.1f}/s, "
        f"processed {report['processedRowsPerSecond']:.1f}/s",
        f"eventTime.watermark {report['eventTime'].get('watermark')}",
        f"observedMetrics {report['observedMetrics']}",
        f"sink {report['sink']['description']}: numOutputRows {report['sink']['numOutputRows']} (-1: not counted)",
        f"stateOperators[0]: numRowsTotal {operator.get('numRowsTotal')}, memoryUsedBytes "
        f"{operator.get('memoryUsedBytes')}, numRowsDroppedByWatermark {operator.get('numRowsDroppedByWatermark')}",
        *(parse_kafka_source(source) for source in report["sources"] if source.get("metrics")),
    ]


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION).parse_args(argv)
    EVENT_LOGS.mkdir(
        parents=True, exist_ok=True
    )  # before the session: Spark refuses to start without it
    with kafka_for_lesson() as bootstrap, explain_failures():
        # --reset also empties the topic: checkpoints that start over would read the old messages too.
        (recreate_topics if args.reset else ensure_topics)(
            bootstrap, [TOPIC], partitions=PARTITIONS
        )
        with lesson_session(LESSON, args, kafka=True, extra_conf=SESSION_CONF) as spark:
            listener = start_listener(spark)
            banner("1. A StreamingQueryListener: one line per micro-batch")
            queries = start_queries(spark, bootstrap, args)
            snapshot = metrics.Snapshot(
                spark, queries[0]
            )  # status, streams.active, metrics: while it runs
            print(
                f"Meanwhile, see the Spark UI's Structured Streaming tab: {snapshot.ui_url}/StreamingQuery/"
            )
            # The producer starts after the query, so the lag starts near 0 and grows.
            with simulator_for_lesson(
                "kafka_producer", "kafka_producer.py", PRODUCER_ARGS, enabled=not args.no_simulator
            ):
                run_queries(queries, args, every=snapshot.take, every_seconds=2)
            say(f"""SLOW: the batch took longer than the {TRIGGER_MS} ms trigger, so the next one started
                late (Spark's log on stderr says "Current batch is falling behind"). LAG GROWING: the
                Kafka lag grew batch after batch: the query reads less than arrives. onQueryIdle comes
                every noDataProgressEventInterval (3 s here) while there is nothing new to read.""")
            listeners.save_progress_picture(
                listener, STATS_QUERY, paths.output_for(LESSON, "progress.png"), TRIGGER_MS
            )

            banner("2. The query's own view: status, lastProgress, recentProgress")
            print("\n".join(parse_progress(queries[0], snapshot)))

            banner("3. A query that fails")
            strict = start_strict(
                spark, write_broken_input(paths.output_for(LESSON, "broken-input"))
            )
            try:
                strict.awaitTermination(120)
            except (
                StreamingQueryException
            ) as error:  # what awaitTermination raises when the query failed
                print(
                    f"awaitTermination raised {type(error).__name__}: {narration.first_line(error)}"
                )
            print(f"query.exception(): {narration.first_line(strict.exception())}")
            listener.print_terminated(STRICT_QUERY)

            banner("4. From outside: Prometheus metrics, and the history server after the run")
            metrics.print_streaming_metrics(snapshot, METRICS_NAMESPACE, STATS_QUERY)
            metrics.print_history_server_hint(EVENT_LOGS)


if __name__ == "__main__":
    run_lesson(main)
