"""08 · Kafka: read events from a topic, quarantine bad ones, write enriched events back.

What you'll learn
  - Reading a topic with ``format("kafka")``: ``subscribe``, ``startingOffsets``,
    ``maxOffsetsPerTrigger``, and the columns every Kafka row has (key, value, topic,
    partition, offset, timestamp, timestampType; ``headers`` too with ``includeHeaders``).
  - Why a Kafka query often shows nothing: ``startingOffsets`` defaults to ``latest``,
    which skips every message already in the topic.
  - Where the offsets live: in the query's checkpoint, not in a Kafka consumer group; and
    ``failOnDataLoss`` (default true), for offsets that retention deleted before they were read.
  - Parsing the value with ``from_json`` and a schema, and sending what does not parse to
    a quarantine topic with its reason, partition, offset and raw text instead of dropping it.
  - Writing to Kafka (a ``key`` and a ``value``, here ``to_json(struct(...))``; optional
    ``headers``, an ``array<struct<key: string, value: binary>>``) and to the console, each
    query with its own checkpoint; the Kafka sink is at-least-once.

Run
  python streaming_tutorial/08_kafka_streaming.py                  # about a minute
  python streaming_tutorial/08_kafka_streaming.py --available-now  # the topic as it is, then exit
  python streaming_tutorial/08_kafka_streaming.py --reset          # empty topics, checkpoints first
  It starts the course's Kafka broker and the producer when they are not running. To
  run them yourself, in two more terminals:
    python local_kafka.py start
    python data_generators/kafka_producer.py --count 300 --rate 10 --malformed-every 25
  then: python streaming_tutorial/08_kafka_streaming.py --no-simulator --duration 60
  Another Kafka: KAFKA_BOOTSTRAP_SERVERS=host:9092 python streaming_tutorial/08_kafka_streaming.py

Practise
  python course.py exercises check 08.1   Parse Kafka events (build)
  python course.py exercises check 08.2   Kafka records with headers (build)

What you'll see
  (a second run, without --reset; counts depend on how far the producer got)
  Checkpoints in checkpoints/08_kafka_streaming: resuming console after batch 3, ...
  ========================================================================
  1. startingOffsets: latest skips what is already there
  ========================================================================
    startingOffsets=latest   -> rows read: 1
    startingOffsets=earliest -> rows read: 443
  ...
  2. Kafka -> parse -> quarantine | enrich -> Kafka + console
  ========================================================================
  Batch: 4
  +----------+---------+----------+-------+---------+------+
  |event_id  |user_id  |event_type|revenue|partition|offset|
  +----------+---------+----------+-------+---------+------+
  |EVT-000267|USER-2039|view      |0.0    |0        |133   |
  |EVT-000273|USER-2025|cart      |0.0    |0        |137   |
  ...
  The pipeline read 330 messages in 4 micro-batches of at most 100
  (maxOffsetsPerTrigger). Its consumer lag at the last one (progress:
  sources[0].metrics.maxOffsetsBehindLatest): 0 messages in the partition
  furthest behind.
  ...
  'events-enriched': 572 records, 288 distinct event_id
  'events-quarantine': 23 records (values that cannot be used, and where they were):
  +----------------+-------------+-----------------+------------------------------------------+
  |source_partition|source_offset|           reason|                                  raw_line|
  +----------------+-------------+-----------------+------------------------------------------+
  |               0|            8|not a JSON object|{"event_id":"EVT-000025","user_id":"USE...|
  ...
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import config, parsing, paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli
from infra.kafka import ensure_topics, explain_failures, recreate_topics, security_options
from infra.kafka_broker import kafka_for_lesson
from infra.runner import (
    banner,
    checkpoint_root,
    finish,
    lesson_session,
    pick_trigger,
    run_lesson,
    run_queries,
    say,
)
from infra.simulators import is_running, simulator_for_lesson

LESSON = "08_kafka_streaming"
# Seconds of the pipeline (part 2); the producer needs 30 s for its 300 messages.
DEFAULT_DURATION = 15
SOURCE_TOPIC = config.TOPIC_EVENTS  # what the producer writes
ENRICHED_TOPIC = config.TOPIC_ENRICHED  # the good events, enriched
QUARANTINE_TOPIC = config.TOPIC_QUARANTINE  # the bad ones, with their reason
PARTITIONS = 3  # so the partition column has something to show
# The producer this lesson starts: 300 messages at 10 per second, every 25th one cut in half.
PRODUCER_ARGS = [
    "--count",
    "300",
    "--rate",
    "10",
    "--malformed-every",
    "25",
    "--partitions",
    str(PARTITIONS),
]
# At most 100 messages per micro-batch (spread over the partitions): a backlog is worked off
# in steps; 100 per 5 s is twice the producer's pace, so the query catches up.
MAX_OFFSETS_PER_TRIGGER = 100
# Where a message came from in Kafka: kept with every record, good or bad.
WHERE_FROM = ("source_partition", "source_offset", "kafka_timestamp")
# The fields part 3 reads back from the quarantine topic.
QUARANTINE_FIELDS = "source_partition INT, source_offset BIGINT, reason STRING, raw_line STRING"


def read_messages(
    spark,
    bootstrap: str,
    topic: str = SOURCE_TOPIC,
    *,
    max_offsets_per_trigger: int = MAX_OFFSETS_PER_TRIGGER,
) -> DataFrame:
    """The topic's messages from the first one, as Kafka gives them: key, value (bytes), topic,
    partition, offset, timestamp."""
    # format("kafka") needs the connector: lesson_session(..., kafka=True) puts it on the classpath.
    # The offsets read are kept in the query's checkpoint; Spark commits none to Kafka, so a lag
    # tool that reads consumer groups sees nothing of this query (kafka.group.id and
    # groupIdPrefix only name its consumers, the group a secured broker's ACLs check).
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        # A secured cluster's login, from the environment (README, 'Your own Kafka cluster');
        # nothing for the course's own broker.
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        # The default is "latest": a new query would skip everything already in the topic.
        .option("startingOffsets", "earliest")
        # Bounds each micro-batch, so a backlog is worked off in steady steps, not one huge batch.
        .option("maxOffsetsPerTrigger", max_offsets_per_trigger)
        # Not set, so at their defaults: failOnDataLoss "true" (the query fails when offsets it
        # still needs are gone: deleted by Kafka's retention before they were read, or the
        # topic recreated; "false" skips them, lost, with a warning in the log), and no
        # minPartitions (one task per Kafka partition; a larger number splits big partitions).
        .load()
    )


def parse_events(messages: DataFrame) -> DataFrame:
    """Kafka rows -> the event's fields, where it came from, and why it cannot be used (or null)."""
    # Keys and values are bytes: cast them to text. Topic, partition, offset and timestamp say
    # where each message came from; a bad record keeps them, so it can be found and fixed.
    # timestamp is the record's own: by default the producer's (CreateTime, timestampType 0),
    # the broker's write time only on a topic set to message.timestamp.type=LogAppendTime (1).
    # The record's headers come only with .option("includeHeaders", "true"): a headers column.
    text = messages.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    # from_json with a schema (a stream cannot infer one); a value that does not fit keeps its
    # text and gets a quarantine reason. Lesson 03 teaches parse_json.
    return parsing.parse_json(text, ECOMMERCE_EVENT_SCHEMA)


def build_enriched(parsed: DataFrame) -> DataFrame:
    """The good events with what downstream consumers want: revenue and the event's date."""
    events = parsing.valid_records(parsed, ECOMMERCE_EVENT_SCHEMA, *WHERE_FROM)
    # Only a purchase earns money; views and carts have revenue 0.
    revenue = F.when(
        F.col("event_type") == "purchase", F.round(F.col("price") * F.col("quantity"), 2)
    )
    return events.withColumn("revenue", revenue.otherwise(F.lit(0.0))).withColumn(
        "event_date", F.to_date("timestamp")
    )


def build_quarantine(parsed: DataFrame) -> DataFrame:
    """The bad records, kept whole: key, reason, raw text, and where the original is in Kafka."""
    return parsing.quarantined(parsed, "key", "source_topic", *WHERE_FROM)


def to_kafka_record(enriched: DataFrame) -> DataFrame:
    """The two columns the Kafka sink needs: key and value (the whole event as JSON)."""
    # The key is the user: Kafka keeps one key in one partition, so a user's events stay in order.
    return enriched.select(
        F.col("user_id").alias("key"), F.to_json(F.struct(*enriched.columns)).alias("value")
    )


def to_quarantine_record(bad: DataFrame) -> DataFrame:
    """Quarantine records for Kafka: the original key, and all it takes to find and fix it."""
    return bad.select(
        "key", F.to_json(F.struct("source_topic", *WHERE_FROM, "reason", "raw_line")).alias("value")
    )


def start_kafka_sink(
    records: DataFrame, bootstrap: str, topic: str, checkpoint: Path, trigger: dict, name: str
):
    """Start a query that writes ``records`` (key, value) to ``topic``."""
    return (
        records.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        # The same login as the source, if the cluster wants one.
        .options(**security_options(bootstrap))
        .option("topic", topic)
        # Required for the Kafka sink: the offsets read and the batches written live here.
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName(name)
        .start()
    )


def start_console(enriched: DataFrame, checkpoint: Path, trigger: dict):
    """Start a query that prints a few columns of the enriched events."""
    # A checkpoint of its own: a second run prints only the messages that came since.
    return (
        enriched.select(
            "event_id",
            "user_id",
            "event_type",
            "revenue",
            F.col("source_partition").alias("partition"),
            F.col("source_offset").alias("offset"),
        )
        .writeStream.format("console")
        .option("truncate", False)
        .option("numRows", 5)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(**trigger)
        .queryName("enriched_to_console")
        .start()
    )


def start_pipeline(spark, bootstrap: str, checkpoints: Path, trigger: dict) -> list:
    """Good events, enriched, to Kafka (keyed by user) and the console; bad ones to the
    quarantine topic."""
    # Three queries, three checkpoints: each reads the topic itself and remembers its own
    # offsets, so one can be restarted or reset without the others.
    parsed = parse_events(read_messages(spark, bootstrap))
    enriched = build_enriched(parsed)
    enriched_to_kafka = start_kafka_sink(
        to_kafka_record(enriched),
        bootstrap,
        ENRICHED_TOPIC,
        checkpoints / "enriched",
        trigger,
        "enriched_to_kafka",
    )
    quarantine_to_kafka = start_kafka_sink(
        to_quarantine_record(build_quarantine(parsed)),
        bootstrap,
        QUARANTINE_TOPIC,
        checkpoints / "quarantine",
        trigger,
        "quarantine_to_kafka",
    )
    enriched_to_console = start_console(enriched, checkpoints / "console", trigger)
    return [enriched_to_kafka, quarantine_to_kafka, enriched_to_console]


def read_row_count(spark, bootstrap: str, starting_offsets: str, topic: str = SOURCE_TOPIC) -> int:
    """Read ``topic`` once, from ``starting_offsets`` to its current end; how many rows came."""
    messages = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        # "latest" or "earliest": where a query with no checkpoint yet starts in the topic.
        .option("startingOffsets", starting_offsets)
        .load()
    )
    # The noop sink reads every row and writes nothing. No checkpointLocation: a new one each
    # time, so startingOffsets is never ignored.
    query = (
        messages.writeStream.format("noop")
        # availableNow ends at the offsets the topic has now.
        .trigger(availableNow=True)
        .start()
    )
    finish([query])
    return sum(progress["numInputRows"] for progress in query.recentProgress)


def read_topic_back(spark, bootstrap: str, topic: str, fields: str) -> DataFrame:
    """A topic read like a table (spark.read, not readStream), every message's JSON value
    parsed."""
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), fields).alias("record"))
        .select("record.*")
    )


def prepare_topics(bootstrap: str, *, reset: bool) -> None:
    """Create the lesson's topics; --reset empties them first (the input only if no producer
    writes to it)."""
    topics = [ENRICHED_TOPIC, QUARANTINE_TOPIC]
    if not is_running("kafka_producer"):
        topics.append(SOURCE_TOPIC)
    if reset:
        recreate_topics(bootstrap, topics, partitions=PARTITIONS)
        print(f"--reset: emptied the topics {', '.join(topics)}")
    ensure_topics(
        bootstrap, [SOURCE_TOPIC, ENRICHED_TOPIC, QUARANTINE_TOPIC], partitions=PARTITIONS
    )


def report_lag(query) -> None:
    """How many messages the query read, in how many micro-batches, and how far behind it was."""
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    messages = sum(p["numInputRows"] for p in batches)
    plural = "es" if len(batches) != 1 else ""
    # The Kafka source reports its consumer lag per partition in each progress: the messages
    # that were in the topic, past the batch's end offset, when the batch was planned.
    last = query.lastProgress or {}
    source = (last.get("sources") or [{}])[0]
    lag = source.get("metrics", {}).get("maxOffsetsBehindLatest")
    say(f"""The pipeline read {messages} messages in {len(batches)} micro-batch{plural} of at
        most {MAX_OFFSETS_PER_TRIGGER} (maxOffsetsPerTrigger). Its consumer lag at the last one
        (progress: sources[0].metrics.maxOffsetsBehindLatest): {lag} messages in the partition
        furthest behind.""")


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    args = parser.parse_args(argv)
    # The broker outlives everything else: Spark's Kafka clients must be able to say goodbye.
    with kafka_for_lesson() as bootstrap, explain_failures():
        prepare_topics(bootstrap, reset=args.reset)
        # The producer starts before Spark, so a backlog is waiting when the queries start.
        with (
            simulator_for_lesson(
                "kafka_producer", "kafka_producer.py", PRODUCER_ARGS, enabled=not args.no_simulator
            ) as producer,
            lesson_session(LESSON, args, kafka=True) as spark,
        ):
            banner("1. startingOffsets: latest skips what is already there")
            for starting in ("latest", "earliest"):
                rows = read_row_count(spark, bootstrap, starting)
                print(f"  startingOffsets={starting:<8} -> rows read: {rows}")
            say("""'latest' (the default!) starts at the end of the topic: the messages already
                there are skipped; only those that arrive after the query starts are read. That
                is the usual reason a first Kafka query prints nothing. 'earliest' reads the topic
                from its first message. Both only matter on a query's first run: afterwards its
                checkpoint decides where it goes on.""")

            banner("2. Kafka -> parse -> quarantine | enrich -> Kafka + console")
            trigger = pick_trigger(args, "5 seconds")
            queries = start_pipeline(spark, bootstrap, checkpoint_root(LESSON, args), trigger)
            run_queries(queries, args, until=producer.done)
            report_lag(queries[0])
            say("""Those offsets live in each query's checkpoint: Spark commits none to a Kafka
                consumer group, so a lag tool that reads consumer groups sees nothing of these
                queries; their progress reports are where the lag is. If Kafka's retention
                deletes messages a query has not read yet (or the topic is recreated), that
                query fails when it reaches them (failOnDataLoss, default true); with
                failOnDataLoss false it skips them, lost, with only a warning in the log.""")

            banner("3. What landed in Kafka")
            ids = read_topic_back(spark, bootstrap, ENRICHED_TOPIC, "event_id STRING")
            bad = read_topic_back(spark, bootstrap, QUARANTINE_TOPIC, QUARANTINE_FIELDS)
            print(
                f"'{ENRICHED_TOPIC}': {ids.count()} records, "
                f"{ids.distinct().count()} distinct event_id"
            )
            print(
                f"'{QUARANTINE_TOPIC}': {bad.count()} records "
                "(values that cannot be used, and where they were):"
            )
            bad.orderBy("source_partition", "source_offset").show(5, truncate=42)
            say("""Delivery to a Kafka sink is at-least-once: if a batch fails after some of its
                records were written, Spark runs the whole batch again and writes them twice.
                Duplicates also come from upstream: run this lesson again without --reset and
                the producer sends the same event_ids once more. So a consumer that must count
                each event once keeps one record per event_id: an upsert by key in a database;
                in Spark (3.5+), withWatermark on the event time, then
                dropDuplicatesWithinWatermark(["event_id"]), which keeps an id until the
                watermark passes its first copy's event time plus the delay. Plain
                dropDuplicates(["event_id"]) keeps every id in its state for ever, watermark or
                not: only a key that holds the event-time column is ever forgotten (lesson
                15).""")


if __name__ == "__main__":
    run_lesson(main)
