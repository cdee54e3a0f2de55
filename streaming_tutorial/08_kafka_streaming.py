"""08 · Kafka: read events from a topic, quarantine bad ones, write enriched events back.

What you'll learn
  - Reading a topic with ``format("kafka")``: ``subscribe``, ``startingOffsets``,
    ``maxOffsetsPerTrigger``, and the columns every Kafka row has (key, value, topic,
    partition, offset, timestamp).
  - Why a Kafka query often shows nothing: ``startingOffsets`` defaults to ``latest``,
    which skips every message already in the topic.
  - Parsing the value with ``from_json`` and a schema, and sending what does not parse to
    a quarantine topic with its partition, offset and raw value instead of dropping it.
  - Writing to Kafka (a ``key`` and a ``value``, here ``to_json(struct(...))``) and to the
    console, each query with its own checkpoint.
  - The Kafka sink is at-least-once: a replay writes duplicates, so consumers dedupe by
    ``event_id``.

Run
  python streaming_tutorial/08_kafka_streaming.py                  # about a minute; starts what it needs
  python streaming_tutorial/08_kafka_streaming.py --available-now  # process all the producer sends, then exit
  python streaming_tutorial/08_kafka_streaming.py --reset          # empty the topics and checkpoints first
  It starts the course's Kafka broker and the producer when they are not running. To
  run them yourself, in two more terminals:
    python local_kafka.py start
    python data_generators/kafka_producer.py --count 300 --rate 10 --malformed-every 25
  then: python streaming_tutorial/08_kafka_streaming.py --no-simulator --duration 60
  Another Kafka: KAFKA_BOOTSTRAP_SERVERS=host:9092 python streaming_tutorial/08_kafka_streaming.py

What you'll see
  (with --reset; counts depend on how far the producer got before Spark started)
  Started the kafka_producer simulator for this run: python data_generators/kafka_producer.py --count 300 ...
  ========================================================================
  1. startingOffsets: latest skips what is already there
  ========================================================================
  Messages already in 'events': 300
    startingOffsets=latest   -> read 0 rows
    startingOffsets=earliest -> read 300 rows
  ========================================================================
  2. Kafka -> parse -> quarantine | enrich -> Kafka + console, for 15 s
  ========================================================================
  -------------------------------------------
  Batch: 0
  -------------------------------------------
  +----------+---------+----------+-------+---------+------+
  |event_id  |user_id  |event_type|revenue|partition|offset|
  +----------+---------+----------+-------+---------+------+
  |EVT-000004|USER-2011|view      |0.0    |0        |0     |
  |EVT-000009|USER-2011|purchase  |749.97 |0        |3     |
  ...
  The pipeline read 300 messages in 4 micro-batches of at most 100
  (maxOffsetsPerTrigger). Messages in 'events' it has not read yet (its
  consumer lag): 0.
  ========================================================================
  3. What landed in Kafka
  ========================================================================
  'events-enriched': 288 records, 288 distinct event_id
  'events-quarantine': 12 records (malformed values, with where they came from):
  +---------+------+-----------------+------------------------------------------+
  |partition|offset|           reason|                                 raw_value|
  +---------+------+-----------------+------------------------------------------+
  |        0|     8|not a JSON object|{"event_id":"EVT-000025","user_id":"USE...|
  |        0|    29|not a JSON object|{"event_id":"EVT-000050","user_id":"USE...|
  ...
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from common import cli, config
from common.errors import CourseError
from common.kafka import end_offsets, ensure_topics, explain_failures, recreate_topics
from common.kafka_broker import kafka_for_lesson
from common.runner import await_queries, banner, checkpoint_root, lesson_session, run_lesson, say
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from common.simulators import is_running, simulator_for_lesson

LESSON = "08_kafka_streaming"
DEFAULT_DURATION = 15
SOURCE_TOPIC = config.TOPIC_EVENTS
ENRICHED_TOPIC = config.TOPIC_ENRICHED
QUARANTINE_TOPIC = config.TOPIC_QUARANTINE
PARTITIONS = 3  # so the partition column has something to show
PRODUCER_COUNT = 300  # the producer this lesson starts: 300 messages at 10 per second...
PRODUCER_RATE = 10
MALFORMED_EVERY = 25  # ...every 25th one cut in half, so the quarantine has work
TRIGGER_INTERVAL = "5 seconds"
# At most 100 messages per micro-batch (spread over the partitions): a backlog is worked off
# in steps; 100 per 5 s is twice the producer's pace, so the query catches up.
MAX_OFFSETS_PER_TRIGGER = 100
AVAILABLE_NOW_TIMEOUT = 600  # --available-now ends when the topic is done; this only bounds a hang
WAIT_FOR_MESSAGES_SECONDS = 60
CONSOLE_ROWS = 5  # rows the console sink prints per batch

CORRUPT_COLUMN = "_corrupt_record"
# The event schema plus a column where from_json puts the raw text it could not fit into it.
PARSE_SCHEMA = StructType(ECOMMERCE_EVENT_SCHEMA.fields + [StructField(CORRUPT_COLUMN, StringType())])
REQUIRED_FIELDS = ("event_id", "user_id", "event_type", "timestamp")
# What goes into each enriched Kafka record's JSON value, in order.
OUTPUT_FIELDS = (
    "event_id", "user_id", "event_type", "product_id", "product_name", "category", "price", "quantity",
    "revenue", "timestamp", "event_date", "kafka_timestamp", "source_partition", "source_offset",
)


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True).parse_args(argv)
    checkpoints = checkpoint_root(LESSON, args)
    # The broker outlives everything else: Spark's Kafka clients must be able to say goodbye.
    with kafka_for_lesson() as bootstrap, explain_failures():
        prepare_topics(bootstrap, reset=args.reset)
        # The producer starts before Spark, so a backlog is waiting when the queries start.
        with simulator_for_lesson("kafka_producer", "kafka_producer.py", producer_args(bootstrap),
                                  enabled=not args.no_simulator) as producer, \
                lesson_session(LESSON, args, kafka=True) as spark:
            banner("1. startingOffsets: latest skips what is already there")
            waiting = wait_for_messages(bootstrap, SOURCE_TOPIC, at_least=MALFORMED_EVERY)
            print(f"Messages already in '{SOURCE_TOPIC}': {waiting}")
            for starting in ("latest", "earliest"):
                rows = count_available(spark, bootstrap, SOURCE_TOPIC, starting, checkpoints / f"demo_{starting}")
                print(f"  startingOffsets={starting:<8} -> read {rows} rows")
            say(f"""'latest' (the default!) starts at the end of the topic: the {waiting} messages
                that were already there are skipped; only messages that arrive after the query
                starts are read. That is the usual reason a first Kafka query prints nothing.
                'earliest' reads the topic from its first message. Both only matter on a
                query's first run: afterwards its checkpoint decides where it goes on.""")

            if args.available_now:
                wait_for_producer(producer)
            banner("2. Kafka -> parse -> quarantine | enrich -> Kafka + console, "
                   + ("until the topic is done" if args.available_now else f"for {args.duration:g} s"))
            raw = read_topic(spark, bootstrap, SOURCE_TOPIC, starting_offsets="earliest",
                             max_offsets_per_trigger=MAX_OFFSETS_PER_TRIGGER)
            parsed = parse_events(raw)
            enriched = enrich(valid_events(parsed))
            trigger = {"availableNow": True} if args.available_now else {"processingTime": TRIGGER_INTERVAL}
            # Three queries, three checkpoints: each reads the topic itself and remembers
            # its own offsets, so one can be restarted or reset without the others.
            queries = [
                write_to_kafka(to_kafka_record(enriched), bootstrap, ENRICHED_TOPIC,
                               checkpoints / "enriched", trigger, "enriched_to_kafka"),
                write_to_kafka(to_quarantine_record(quarantine(parsed)), bootstrap, QUARANTINE_TOPIC,
                               checkpoints / "quarantine", trigger, "quarantine_to_kafka"),
                enriched.select("event_id", "user_id", "event_type", "revenue",
                                F.col("source_partition").alias("partition"), F.col("source_offset").alias("offset"))
                .writeStream.format("console").option("truncate", False).option("numRows", CONSOLE_ROWS)
                .option("checkpointLocation", str(checkpoints / "console"))
                .trigger(**trigger).queryName("enriched_to_console").start(),
            ]
            await_queries(queries, AVAILABLE_NOW_TIMEOUT if args.available_now else args.duration)
            report_progress(queries[0], bootstrap)

            banner("3. What landed in Kafka")
            show_outputs(spark, bootstrap)
            say("""Delivery to a Kafka sink is at-least-once: if a batch fails after some of its
                records were written, Spark runs the whole batch again and writes them twice.
                Duplicates also come from upstream: run this lesson again without --reset and
                the producer sends the same event_ids once more. So a consumer that must count
                each event once keeps one record per event_id (dropDuplicates on event_id with
                a watermark in Spark, an upsert by key in a database).""")


def producer_args(bootstrap: str) -> list[str]:
    return ["--count", str(PRODUCER_COUNT), "--rate", str(PRODUCER_RATE), "--malformed-every", str(MALFORMED_EVERY),
            "--partitions", str(PARTITIONS), "--bootstrap-servers", bootstrap]


def wait_for_producer(producer) -> None:
    """--available-now: let the producer we started finish, so one run processes all it sends."""
    if producer is None:
        return
    say("--available-now: waiting for the producer to finish, then processing everything once.")
    try:
        producer.wait(timeout=PRODUCER_COUNT / PRODUCER_RATE + WAIT_FOR_MESSAGES_SECONDS)
    except subprocess.TimeoutExpired:
        say("The producer is still sending; processing what the topic holds now.")


def report_progress(query, bootstrap: str) -> None:
    """How many messages the query read, in how many micro-batches, and how far behind it is."""
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    read_up_to = 0
    if query.lastProgress:
        end = query.lastProgress["sources"][0]["endOffset"]
        end = json.loads(end) if isinstance(end, str) else end
        read_up_to = sum(int(offset) for offset in end.get(SOURCE_TOPIC, {}).values())
    behind = sum(end_offsets(bootstrap, SOURCE_TOPIC).values()) - read_up_to
    say(f"The pipeline read {sum(p['numInputRows'] for p in batches)} messages in {len(batches)} "
        f"micro-batches of at most {MAX_OFFSETS_PER_TRIGGER} (maxOffsetsPerTrigger). Messages in "
        f"'{SOURCE_TOPIC}' it has not read yet (its consumer lag): {behind}.")


def prepare_topics(bootstrap: str, *, reset: bool) -> None:
    """Create the lesson's topics; with --reset, empty them first so the run starts from scratch."""
    topics = [SOURCE_TOPIC, ENRICHED_TOPIC, QUARANTINE_TOPIC]
    if reset:
        if is_running("kafka_producer"):  # your producer is writing to it: leave the input alone
            topics.remove(SOURCE_TOPIC)
        recreate_topics(bootstrap, topics, partitions=PARTITIONS)
        print(f"--reset: emptied the topics {', '.join(topics)}")
    ensure_topics(bootstrap, [SOURCE_TOPIC, ENRICHED_TOPIC, QUARANTINE_TOPIC], partitions=PARTITIONS)


def read_topic(spark, bootstrap: str, topic: str, *, starting_offsets: str = "earliest",
               max_offsets_per_trigger: int | None = None) -> DataFrame:
    """A streaming DataFrame over ``topic``: key, value (bytes), topic, partition, offset, timestamp."""
    reader = (
        spark.readStream.format("kafka")  # get_spark(kafka=True) put the connector on the classpath
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        # The default is "latest": a new query would skip everything already in the topic.
        .option("startingOffsets", starting_offsets)
    )
    if max_offsets_per_trigger:
        # Bounds each micro-batch, so a backlog is worked off in steady steps, not one huge batch.
        reader = reader.option("maxOffsetsPerTrigger", max_offsets_per_trigger)
    return reader.load()


def parse_events(raw: DataFrame) -> DataFrame:
    """Kafka rows -> the parsed event (a struct), the raw text, where it came from, and why it is bad (or null)."""
    # Kafka keys and values are bytes: cast to text first, then parse the JSON with a schema
    # (a stream cannot infer one). PERMISSIVE parsing never fails the query: what does not
    # fit the schema comes back as nulls, and its raw text in CORRUPT_COLUMN.
    text = raw.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("raw_value"),
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    event = F.from_json("raw_value", PARSE_SCHEMA, {"columnNameOfCorruptRecord": CORRUPT_COLUMN})
    return text.withColumn("event", event).withColumn("quarantine_reason", quarantine_reason())


def quarantine_reason() -> Column:
    """Why a parsed row cannot be used, or null when it is a good event."""
    reason = (
        F.when(F.col("raw_value").isNull(), F.lit("empty value"))
        # json_object_keys is null when the text is not a JSON object (cut off, plain text, a list).
        .when(F.json_object_keys("raw_value").isNull(), F.lit("not a JSON object"))
        .when(F.col(f"event.{CORRUPT_COLUMN}").isNotNull(), F.lit("a field has the wrong type"))
    )
    for field in REQUIRED_FIELDS:
        reason = reason.when(F.col(f"event.{field}").isNull(), F.lit(f"missing {field}"))
    return reason


def valid_events(parsed: DataFrame) -> DataFrame:
    """The good events: the event's fields plus where each came from in Kafka."""
    fields = [F.col(f"event.{field.name}").alias(field.name) for field in ECOMMERCE_EVENT_SCHEMA.fields]
    return parsed.where(F.col("quarantine_reason").isNull()).select(
        *fields, "source_partition", "source_offset", "kafka_timestamp"
    )


def quarantine(parsed: DataFrame) -> DataFrame:
    """The bad records, kept whole: raw text, reason, and the partition and offset to find the original."""
    return parsed.where(F.col("quarantine_reason").isNotNull()).select(
        "key", "source_topic", "source_partition", "source_offset", "kafka_timestamp",
        F.col("quarantine_reason").alias("reason"), "raw_value",
    )


def enrich(events: DataFrame) -> DataFrame:
    """Add what downstream consumers want: revenue and the event's calendar date."""
    # Only a purchase earns money; views and carts have revenue 0.
    revenue = F.when(F.col("event_type") == "purchase", F.round(F.col("price") * F.col("quantity"), 2))
    return events.withColumn("revenue", revenue.otherwise(F.lit(0.0))).withColumn(
        "event_date", F.to_date("timestamp")
    )


def to_kafka_record(enriched: DataFrame) -> DataFrame:
    """The two columns the Kafka sink needs: key (the user, so a user's events stay in order) and value."""
    return enriched.select(
        F.col("user_id").alias("key"),
        F.to_json(F.struct(*OUTPUT_FIELDS)).alias("value"),
    )


def to_quarantine_record(bad: DataFrame) -> DataFrame:
    """Quarantine records for Kafka: the original key, and everything needed to find and fix the message."""
    return bad.select(
        "key",
        F.to_json(F.struct("source_topic", "source_partition", "source_offset", "kafka_timestamp",
                           "reason", "raw_value")).alias("value"),
    )


def write_to_kafka(records: DataFrame, bootstrap: str, topic: str, checkpoint: Path, trigger: dict, name: str):
    """Start a query that writes ``records`` (key, value) to ``topic``."""
    return (
        records.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        # Required for the Kafka sink: the offsets read and the batches written live here.
        .option("checkpointLocation", str(checkpoint))
        .trigger(**trigger)
        .queryName(name)
        .start()
    )


def count_available(spark, bootstrap: str, topic: str, starting_offsets: str, checkpoint: Path) -> int:
    """Read what ``topic`` holds right now once (availableNow) from ``starting_offsets``; return the row count."""
    # A fresh checkpoint each time: with an old one, startingOffsets would be ignored.
    shutil.rmtree(checkpoint, ignore_errors=True)
    query = (
        read_topic(spark, bootstrap, topic, starting_offsets=starting_offsets)
        .writeStream.format("noop")  # reads every row, writes nothing: a counter
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(AVAILABLE_NOW_TIMEOUT)
    if query.exception() is not None:
        raise query.exception()
    return sum(progress["numInputRows"] for progress in query.recentProgress)


def wait_for_messages(bootstrap: str, topic: str, at_least: int) -> int:
    """Wait until ``topic`` holds ``at_least`` messages; return how many it holds."""
    deadline = time.monotonic() + WAIT_FOR_MESSAGES_SECONDS
    while True:
        held = sum(end_offsets(bootstrap, topic).values())
        if held >= at_least:
            return held
        if time.monotonic() > deadline:
            raise CourseError(
                f"Topic '{topic}' holds {held} messages after {WAIT_FOR_MESSAGES_SECONDS} s. Start the "
                "producer in a second terminal: python data_generators/kafka_producer.py "
                "(or run the lesson without --no-simulator)."
            )
        time.sleep(0.5)  # polling the broker while the producer fills the topic


def show_outputs(spark, bootstrap: str) -> None:
    """Read both output topics back as batch DataFrames: counts, duplicates, the quarantine."""
    def topic_frame(topic: str) -> DataFrame:
        # spark.read (not readStream) reads a topic like a table: from startingOffsets to the end.
        return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("startingOffsets", "earliest").load()
                .select(F.col("value").cast("string").alias("json")))

    enriched = topic_frame(ENRICHED_TOPIC).select(F.get_json_object("json", "$.event_id").alias("event_id"))
    totals = enriched.agg(F.count("*").alias("records"), F.count_distinct("event_id").alias("ids")).first()
    print(f"'{ENRICHED_TOPIC}': {totals['records']} records, {totals['ids']} distinct event_id")
    bad = topic_frame(QUARANTINE_TOPIC).select(
        F.from_json("json", "source_partition INT, source_offset BIGINT, reason STRING, raw_value STRING").alias("q")
    ).select("q.*")
    print(f"'{QUARANTINE_TOPIC}': {bad.count()} records (malformed values, with where they came from):")
    bad.select(F.col("source_partition").alias("partition"), F.col("source_offset").alias("offset"),
               "reason", "raw_value").orderBy("partition", "offset").show(5, truncate=42)


if __name__ == "__main__":
    run_lesson(main)
