r"""14 · Monitoring: what is my query doing, how far behind is it, and why did it stop?

What you'll learn
  - The query's own view: ``query.status``, ``lastProgress``, ``recentProgress`` and
    ``spark.streams.active``; the progress fields that matter (durationMs, input vs processed
    rows per second, eventTime.watermark, stateOperators, a Kafka source's lag and offsets).
  - A Python ``StreamingQueryListener`` that prints one line per micro-batch and flags a batch
    slower than its trigger and a lag that keeps growing; ``onQueryIdle`` when no data comes;
    why its callbacks must be quick (one thread calls them all), and ``removeListener``.
  - A failing query: ``StreamingQueryException`` from ``awaitTermination``, ``query.exception()``
    and what the listener's ``onQueryTerminated`` received.
  - The Spark UI's Structured Streaming tab, event logs and the history server after the run,
    and Prometheus metrics (``spark.sql.streaming.metricsEnabled``) for a monitoring system.

Run
  python streaming_tutorial/14_monitoring.py                 # about a minute; starts what it needs
  python streaming_tutorial/14_monitoring.py --duration 300  # five minutes to look at the Spark UI
  It starts the course's Kafka broker when none runs, and a producer that sends sensor readings
  faster than the query may read them (maxOffsetsPerTrigger), so the lag grows, then shrinks.
  To run the producer yourself: --no-simulator, and in a second terminal:
    python data_generators/kafka_producer.py --kind sensor --topic monitoring-readings \
      --count 160 --rate 20

Practise
  python course.py exercises check 14.1   A listener's log of every batch (build)
  python course.py exercises check 14.2   What the progress says (predict)

What you'll see
  (a second run, without --reset; times, rates and the lag vary from run to run)
  Checkpoints in checkpoints/14_monitoring: resuming quarantine after batch 23, stats after batch...
  ...
  [listener] onQueryStarted: sensor_stats at 2026-11-23T09:22:33.202Z
    query         batch  rows   in/s    done/s   batch ms  state rows  watermark  lag    flags
  Meanwhile, see the Spark UI's Structured Streaming tab: http://127.0.0.1:4040/StreamingQuery/
  ...
    sensor_stats  26     9      13.0    3.4      2664      11          09:17:18   0      SLOW: 26...
    sensor_stats  27     15     5.6     20.9     719       9           09:22:30   25
    sensor_stats  28     15     11.4    14.9     1008      9           09:22:46   33
    sensor_stats  29     15     7.5     17.6     852       11          09:22:58   48     LAG GROW...
    sensor_stats  30     15     7.5     12.6     1191      10          09:23:16   59     LAG GROW...
    sensor_stats  31     15     7.5     19.8     759       7           09:23:30   49
    ...
    sensor_stats  36     16     8.0     22.2     721       9           09:24:46   0
    sensor_stats  37     0      0.0     0.0      762       6           09:24:59   0
  [listener] onQueryIdle: sensor_stats found no new data (trigger at 2026-11-23T09:23:00.000Z)
  ...
  Saved output/14_monitoring/progress.png: batch duration, rows per second and Kafka lag per ...
  ...
  lastProgress: batch 38, an idle report
  the last batch that read rows, 36: durationMs {'addBatch': 463, 'commitOffsets': 43, 'getBatch'...
  numInputRows 16: arriving 8.0/s, processed 22.2/s
  ...
  stateOperators[0]: numRowsTotal 9, memoryUsedBytes 4792, numRowsDroppedByWatermark 1
  offsets behind latest: avg 0, max 0; endOffset {'monitoring-readings': {'0': 312, '1': 168}}; ...
  ...
  3. A query that fails
  ...
  query.exception(): [MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are ...
  onQueryTerminated received: exception org.apache.spark.SparkException: [MALFORMED_RECORD_IN_PAR...
    errorClassOnException MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION
  ...
  http://127.0.0.1:4040/metrics/prometheus, as last fetched while the query ran: 12 streaming gauges
  ...
    metrics_streaming_course_driver_spark_streaming_sensor_stats_latency_Value{type="gauges"} 15 ...
  ...
"""

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import lesson14_metrics as metrics
from lesson14_progress_tools import (
    COLUMNS,
    BatchLine,
    batch_line,
    format_columns,
    format_line,
    offsets,
    save_progress_picture,
)
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery, StreamingQueryListener

from common import paths, storage
from common.parsing import parse_json, quarantined, valid_records
from common.schemas import SENSOR_SCHEMA
from infra import cli, files
from infra.kafka import ensure_topics, explain_failures, recreate_topics, security_options
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
TOPIC = "monitoring-readings"
PARTITIONS = 2
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
TRIGGER_INTERVAL = "2 seconds"
TRIGGER_MS = 2000  # the same interval in ms: the listener flags a batch that took longer
MAX_OFFSETS_PER_TRIGGER = 16
WINDOW = "10 seconds"
WATERMARK_DELAY = "10 seconds"
STATS_QUERY = "sensor_stats"
QUARANTINE_QUERY = "sensor_quarantine"
STRICT_QUERY = "strict_reader"
# Given when the session is created. The event log (spark.eventLog.*) and the Prometheus servlet
# (spark.metrics.conf.*, spark.metrics.namespace) are read only then: spark.conf.set is too late.
# spark.sql.streaming.metricsEnabled and noDataProgressEventInterval (onQueryIdle after 3 s
# without new data, not 10 s) are read by each query when it starts: spark.conf.set(...) before
# start() works as well (a query already running keeps what it started with).
EVENT_LOGS = paths.OUTPUT_DIR / "spark-events"  # every run's event log; --reset keeps it
# The metrics' prefix; Spark's default is the application id, which changes every run.
METRICS_NAMESPACE = "streaming_course"
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
    """The topic's sensor readings, parsed, with a quarantine reason for those that do not
    parse."""
    messages = (
        # lesson_session(kafka=True) put the connector on the classpath.
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        # A secured cluster's login (see the README); nothing for the course's own broker.
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        # The default is "latest": a new query would skip everything already in the topic.
        .option("startingOffsets", "earliest")
        # Bounds each micro-batch: while the producer sends faster, the lag grows (and shows).
        .option("maxOffsetsPerTrigger", max_offsets_per_trigger)
        .load()
    )
    # Kafka hands over bytes: the value as text for the parser, and where each message came
    # from in the topic, which the quarantine keeps.
    lines = messages.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    # Lesson 03's parse: the reading's fields, and a quarantine_reason for a message that is
    # no reading.
    return parse_json(lines, SENSOR_SCHEMA)


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


def start_stats(stats: DataFrame, output: Path, checkpoint: Path, trigger: dict) -> StreamingQuery:
    """The closed windows, appended to JSON files."""
    return (
        stats.writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(output))
        .option("checkpointLocation", paths.uri(checkpoint))
        # queryName names the query everywhere you monitor it: the listener, the UI, the metrics.
        .queryName(STATS_QUERY)
        .trigger(**trigger)
        .start()
    )


def start_quarantine(
    bad: DataFrame, folder: Path, checkpoint: Path, trigger: dict
) -> StreamingQuery:
    """The messages that are no usable reading, appended to JSON files with their reason."""
    return (
        bad.writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(folder))
        # A checkpoint of its own: a restart adds only the bad messages it has not written yet.
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName(QUARANTINE_QUERY)
        .trigger(**trigger)
        .start()
    )


def start_queries(spark, bootstrap: str, args) -> list[StreamingQuery]:
    """The stats to JSON files; a message that does not parse to the quarantine with its
    reason."""
    checkpoints = checkpoint_root(LESSON, args)
    trigger = pick_trigger(args, TRIGGER_INTERVAL)
    readings = read_readings(spark, bootstrap)
    # Where each bad message is in the topic, so it can be found and fixed.
    bad = quarantined(readings, "source_partition", "source_offset")
    return [
        start_stats(
            build_sensor_stats(readings),
            paths.output_for(LESSON, "stats"),
            checkpoints / "stats",
            trigger,
        ),
        start_quarantine(
            bad,
            paths.output_for(LESSON, "quarantine"),
            checkpoints / "quarantine",
            trigger,
        ),
    ]


@dataclass
class Terminated:
    """What onQueryTerminated received: the query's name (from its start event), the error text
    and its error class (both None when the query was stopped, not failed)."""

    query: str
    exception: str | None
    error_class: str | None


def print_now(text: str) -> None:
    """The listener's default output: stdout, at once (its thread is not the lesson's)."""
    print(text, flush=True)


class ProgressPrinter(StreamingQueryListener):
    """A StreamingQueryListener: Spark calls it for every query of the session.

    What it receives (pyspark 4.2):

    - ``onQueryStarted``: synchronously, before ``start()`` returns;
    - ``onQueryProgress``: after each micro-batch that ran (with or without new rows), on the
      listener bus thread, a little after the batch; ``event.progress.json`` is the report;
    - ``onQueryIdle``: instead of a progress event while there is no new data, at most once per
      ``spark.sql.streaming.noDataProgressEventInterval`` (the idle report still lands in
      ``query.recentProgress``);
    - ``onQueryTerminated``: the query's id and, if it failed, the error text (with its Java
      trace) and its error class.

    This one prints a header when a watched query starts, one line per micro-batch it runs
    (flagged when slow or when the Kafka lag keeps growing), a line when it goes idle or ends;
    and it keeps every event (``lines``, ``idle``, ``terminated``). ``watch``: the query names
    to print (None: all); the others' events are kept, not printed.

    Spark calls onQueryProgress, onQueryIdle and onQueryTerminated of every listener of the
    session one at a time, on one thread (the listener bus): a slow callback delays every later
    event of every query and listener, and events queue up behind it (Spark drops them once the
    queue is full). So these callbacks only parse, print and append; anything slow (a database,
    an HTTP call) belongs on a thread or queue of your own.
    """

    def __init__(
        self,
        *,
        trigger_ms: int | None = None,
        watch: set[str] | None = None,
        out: Callable[[str], None] = print_now,
    ) -> None:
        self.trigger_ms = trigger_ms
        self.watch = watch
        self.out = out
        self.names: dict[str, str] = {}  # query id -> name
        self.lines: list[BatchLine] = []
        self.idle: list[tuple[str, str]] = []  # (query, timestamp)
        self.terminated: list[Terminated] = []
        # The events arrive on Spark's thread: a condition guards the lists and wakes wait_for.
        self._changed = threading.Condition()

    def _shown(self, name: str) -> bool:
        return self.watch is None or name in self.watch

    def onQueryStarted(self, event) -> None:
        # The start event and each progress report carry the name; the idle and terminated
        # events carry only the query's id: keep the name by id for them.
        with self._changed:
            self.names[str(event.id)] = event.name or str(event.id)[:8]
        if self._shown(self.names[str(event.id)]):
            self.out(
                f"[listener] onQueryStarted: {event.name} at {event.timestamp}\n"
                + format_columns(COLUMNS)
            )

    def onQueryProgress(self, event) -> None:
        report = json.loads(event.progress.json)  # the report as Spark writes it: plain JSON
        with self._changed:
            before = [
                line.lag
                for line in self.lines
                if line.query == report.get("name") and line.lag is not None
            ]
            line = batch_line(report, trigger_ms=self.trigger_ms, lags_before=before)
            self.lines.append(line)
            self._changed.notify_all()
        if self._shown(line.query):
            self.out(format_columns(format_line(line)))

    def onQueryIdle(self, event) -> None:
        name = self.names.get(str(event.id), str(event.id)[:8])
        with self._changed:
            self.idle.append((name, event.timestamp))
            self._changed.notify_all()
        if self._shown(name):
            self.out(
                f"[listener] onQueryIdle: {name} found no new data (trigger at {event.timestamp})"
            )

    def onQueryTerminated(self, event) -> None:
        name = self.names.get(str(event.id), str(event.id)[:8])
        with self._changed:
            self.terminated.append(Terminated(name, event.exception, event.errorClassOnException))
            self._changed.notify_all()
        if self._shown(name):
            ending = " failed" if event.exception else " stopped"
            self.out(f"[listener] onQueryTerminated: {name}{ending}")

    def wait_for(self, condition: Callable[[], object], timeout: float) -> bool:
        """Wait until ``condition()`` is true (checked whenever an event arrives), at most
        ``timeout`` s: events come a little after the fact, so never wait with a sleep."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def print_terminated(self, query: str, timeout: float = 30.0) -> None:
        """Print what onQueryTerminated received for ``query`` (waiting at most ``timeout`` s
        for it): the error's first line and its error class."""
        if not self.wait_for(
            lambda: any(ended.query == query for ended in self.terminated), timeout
        ):
            print(
                f"onQueryTerminated for {query} has not arrived within {timeout:g} s.", flush=True
            )
        for ended in self.terminated:
            if ended.query != query:
                continue
            if ended.exception:
                error = narration.first_line(ended.exception)
            else:
                error = "None (stopped, not failed)"
            print(
                f"onQueryTerminated received: exception {error}\n"
                f"  errorClassOnException {ended.error_class}",
                flush=True,
            )

    def batches_of(self, query: str) -> list[BatchLine]:
        with self._changed:
            return [line for line in self.lines if line.query == query]


def start_listener(spark) -> ProgressPrinter:
    """One line per micro-batch of the lesson's queries, flags for a slow batch and a growing
    lag."""
    listener = ProgressPrinter(trigger_ms=TRIGGER_MS, watch={STATS_QUERY, STRICT_QUERY})
    spark.streams.addListener(listener)  # before start(): it sees every query's start too
    return listener


def write_broken_input(folder: Path) -> Path:
    """A file with one good reading and one line cut in half, as a crashed writer leaves it."""
    good = (
        '{"reading_id":1,"sensor_id":"sensor-0","temperature":21.5,"humidity":40.0,'
        '"event_time":"2025-01-15T10:30:00.000Z"}'
    )
    # Spark must read what Python writes here.
    storage.require_local_input("The broken-input demo", folder)
    files.write_atomically(folder, "readings.json", f"{good}\n{good[:30]}\n")
    return folder


def start_strict(spark, folder: Path) -> StreamingQuery:
    """A query that must fail: a FAILFAST parse turns the first line that does not parse into
    an error."""
    lines = (
        spark.readStream.format("text")
        # A text source needs no schema: one column, value, per line.
        .load(paths.uri(folder))
    )
    parsed = lines.select(F.from_json("value", SENSOR_SCHEMA, {"mode": "FAILFAST"}))
    return (
        # noop runs the query and drops its rows: enough to fail. No checkpointLocation: Spark
        # uses a temporary one, fine for a query nobody restarts.
        parsed.writeStream.format("noop")
        .queryName(STRICT_QUERY)
        # Read the file there once, then stop: this query ends by itself, or fails.
        .trigger(availableNow=True)
        .start()
    )


def describe_kafka_source(source: dict) -> str:
    """A Kafka source's lag and offsets: its metrics are strings, its offsets JSON text."""
    lag = {name: float(value) for name, value in source["metrics"].items()}  # '17.5' -> 17.5
    end = offsets(source["endOffset"])
    latest = offsets(source["latestOffset"])
    return (
        f"offsets behind latest: avg {lag['avgOffsetsBehindLatest']:g}, max "
        f"{lag['maxOffsetsBehindLatest']:g}; endOffset {end}; latestOffset {latest}"
    )


def describe_progress(query: StreamingQuery, snapshot: metrics.Snapshot) -> list[str]:
    """The query's own view: status and streams.active (looked at while it ran), lastProgress
    (maybe an idle report), and the last micro-batch that read rows."""
    last = query.lastProgress
    read = [
        report for report in progress.batches_run(query.recentProgress) if report["numInputRows"]
    ]
    if "addBatch" in last["durationMs"]:
        kind = "a batch that ran"
    else:
        # An idle report times only the look for new offsets: it has no addBatch.
        kind = "an idle report"
    if read:
        details = describe_report(read[-1])
    else:
        details = ["no micro-batch read rows: no new data this run"]
    return [
        f"While it ran: spark.streams.active {snapshot.active}",
        f"  query.status {snapshot.status}",
        f"lastProgress: batch {last['batchId']}, {kind}",
        *details,
    ]


def describe_report(report: dict) -> list[str]:
    """The fields of one progress report that answer "what is my query doing?"."""
    operator = (report.get("stateOperators") or [{}])[0]
    sink = report["sink"]
    return [
        f"the last batch that read rows, {report['batchId']}: durationMs {report['durationMs']}",
        f"numInputRows {report['numInputRows']}: arriving {report['inputRowsPerSecond']:.1f}/s, "
        f"processed {report['processedRowsPerSecond']:.1f}/s",
        f"eventTime.watermark {report['eventTime'].get('watermark')}",
        f"observedMetrics {report['observedMetrics']}",
        f"sink {sink['description']}: numOutputRows {sink['numOutputRows']} (-1: not counted)",
        f"stateOperators[0]: numRowsTotal {operator.get('numRowsTotal')}, memoryUsedBytes "
        f"{operator.get('memoryUsedBytes')}, numRowsDroppedByWatermark "
        f"{operator.get('numRowsDroppedByWatermark')}",
        *(describe_kafka_source(source) for source in report["sources"] if source.get("metrics")),
    ]


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION).parse_args(argv)
    # Before the session: Spark refuses to start without the event log's folder.
    EVENT_LOGS.mkdir(parents=True, exist_ok=True)
    with kafka_for_lesson() as bootstrap, explain_failures():
        if args.reset:
            # --reset also empties the topic: checkpoints that start over would read the old
            # messages too.
            recreate_topics(bootstrap, [TOPIC], partitions=PARTITIONS)
        else:
            ensure_topics(bootstrap, [TOPIC], partitions=PARTITIONS)
        with lesson_session(LESSON, args, kafka=True, extra_conf=SESSION_CONF) as spark:
            listener = start_listener(spark)
            banner("1. A StreamingQueryListener: one line per micro-batch")
            queries = start_queries(spark, bootstrap, args)
            # status, streams.active and the metrics page: looked at while the query runs.
            snapshot = metrics.Snapshot(spark, queries[0])
            ui_page = f"{snapshot.ui_url}/StreamingQuery/"
            print(f"Meanwhile, see the Spark UI's Structured Streaming tab: {ui_page}")
            # The producer starts after the query, so the lag starts near 0 and grows.
            with simulator_for_lesson(
                "kafka_producer", "kafka_producer.py", PRODUCER_ARGS, enabled=not args.no_simulator
            ):
                run_queries(queries, args, every=snapshot.take, every_seconds=2)
            say(f"""SLOW: the batch took longer than the {TRIGGER_MS} ms trigger, so the next one
                started late (Spark's log on stderr says "Current batch is falling behind"). LAG
                GROWING: the Kafka lag grew batch after batch: the query reads less than arrives.
                onQueryIdle comes every noDataProgressEventInterval (3 s here) while there is
                nothing new to read.""")
            save_progress_picture(
                listener.batches_of(STATS_QUERY),
                STATS_QUERY,
                paths.output_for(LESSON, "progress.png"),
                TRIGGER_MS,
            )

            banner("2. The query's own view: status, lastProgress, recentProgress")
            print("\n".join(describe_progress(queries[0], snapshot)))

            banner("3. A query that fails")
            broken = write_broken_input(paths.output_for(LESSON, "broken-input"))
            strict = start_strict(spark, broken)
            try:
                strict.awaitTermination(120)
            except StreamingQueryException as error:
                # What awaitTermination raises when the query failed.
                first = narration.first_line(error)
                print(f"awaitTermination raised {type(error).__name__}: {first}")
            print(f"query.exception(): {narration.first_line(strict.exception())}")
            listener.print_terminated(STRICT_QUERY)
            # Its last event is in: the listener is no longer needed. removeListener takes it off
            # the listener bus (events not yet delivered to it are dropped); until then Spark
            # calls it for every query this session starts.
            spark.streams.removeListener(listener)
            say("""A listener's callbacks run one at a time on Spark's listener-bus thread, the
                same thread for every listener and query of the session: a slow callback delays
                every event after it. Keep them quick, and remove a listener you no longer need
                with spark.streams.removeListener(listener).""")

            banner("4. From outside: Prometheus metrics, and the history server after the run")
            metrics.print_streaming_metrics(snapshot, METRICS_NAMESPACE, STATS_QUERY)
            say("""The Prometheus servlet (spark.metrics.conf.*) and the event log are read once,
                when the session starts: they go in its builder (SESSION_CONF here).
                spark.sql.streaming.metricsEnabled is read by each query when it starts:
                spark.conf.set("spark.sql.streaming.metricsEnabled", "true") before start()
                works too; a query already running keeps what it started with.""")
            metrics.print_history_server_hint(EVENT_LOGS)


if __name__ == "__main__":
    run_lesson(main)
