"""Check of 08.2: the learner's records written by the real Kafka sink, and read back.

The run creates a topic of its own (PARTITIONS partitions) on a real broker, starts the
learner's records into it with writeStream.format("kafka"), and feeds the scenario's events one
micro-batch at a time (one file, then processAllAvailable); after each batch it notes the
topic's end offsets. Then it reads the topic back with Spark's Kafka source (includeHeaders),
gives each record to the batch whose offsets hold it, and deletes the topic. A row is
(partition, key, value, headers), bytes shown as UTF-8 text ('0x...' when they are not).

Where the broker is: practice.session.exercise_kafka (KAFKA_BOOTSTRAP_SERVERS, a broker already
running, or the course's own, started once and stopped when the process ends). Where Spark is: the
session the check is given, which has the Kafka connector (practice.session.exercise_session, and
the test suite's).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from common import paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra.files import json_lines, write_atomically
from infra.kafka import delete_topics, end_offsets, ensure_topics, security_options
from practice.observe import Batch, Observation, sort_rows
from practice.scenarios import at
from practice.session import exercise_kafka
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import stream_batches

PARTITIONS = 3  # the topic's partitions: the key decides which one a record goes to
COLUMNS = ["partition", "key", "value", "headers"]


def event(event_id, user, kind, time_of_day, product, name, category, price, quantity) -> dict:
    """A shop event (schemas.ECOMMERCE_EVENT_SCHEMA) with every field given, None for a null."""
    return {
        "event_id": event_id,
        "user_id": user,
        "event_type": kind,
        "product_id": product,
        "product_name": name,
        "category": category,
        "price": price,
        "quantity": quantity,
        "timestamp": at(time_of_day),
    }


def shown(data: bytes | None) -> str | None:
    """Bytes as the check shows them: their UTF-8 text, or '0x' and hex when they are not."""
    if data is None:
        return None
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + bytes(data).hex()


def read_back(spark, bootstrap: str, topic: str) -> list:
    """Every record of ``topic``, as Spark's Kafka source gives it (headers included)."""
    records = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
    )
    return records.select("partition", "offset", "key", "value", "headers").collect()


def build_records(spark, module, folder: Path):
    """The learner's records over a stream of the JSON files in ``folder`` (Spark analyses each
    DataFrame as it is built: a column that does not exist fails here)."""
    from practice.checking import NotStarted

    folder.mkdir(parents=True, exist_ok=True)
    events = stream_batches(spark, folder, ECOMMERCE_EVENT_SCHEMA)
    try:
        records = module.to_kafka_records(events)
    except NotImplementedError as error:
        raise NotStarted() from error
    return records


def write_and_read_back(spark, records, scenario, workdir: Path, bootstrap: str) -> Observation:
    """The scenario's events (files in workdir/input/events, the folder ``records`` streams)
    through the learner's records into the Kafka sink, batch by batch."""
    folder = workdir / "input" / "events"
    topic = f"exercise-08-2-{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, [topic], partitions=PARTITIONS)
    try:
        query = (
            records.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .options(**security_options(bootstrap))
            .option("topic", topic)
            .option("checkpointLocation", paths.uri(workdir / "checkpoint"))
            .start()
        )
        ends = []  # each batch's end offsets: {partition: next offset}
        try:
            for number, batch in enumerate(scenario.batches):
                if scenario.reads_scrambled:
                    batch = list(reversed(batch))
                write_atomically(folder, f"batch-{number:04d}.json", json_lines(batch))
                # Waits until the batch that reads this file has run and the sink has flushed.
                query.processAllAvailable()
                ends.append(end_offsets(bootstrap, topic))
        finally:
            query.stop()
        if query.exception() is not None:
            raise query.exception()
        written = read_back(spark, bootstrap, topic)
    finally:
        delete_topics(bootstrap, [topic])
    batches = [[] for _ in ends]
    for record in written:
        number = next(n for n, end in enumerate(ends) if record.offset < end[record.partition])
        headers = record.headers or []
        batches[number].append(
            (
                record.partition,
                shown(record.key),
                shown(record.value),
                tuple((header.key, shown(header.value)) for header in headers),
            )
        )
    return Observation(list(COLUMNS), [Batch(sort_rows(rows)) for rows in batches])


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """One scenario. The learner's records are built before the broker is looked for (or
    started): a TODO, a Python error or a column that does not exist is reported at once."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    records = build_records(spark, module, workdir / "input" / "events")
    return write_and_read_back(spark, records, scenario, workdir, exercise_kafka())


# --- What the check recognises -------------------------------------------------------------


def values(observation) -> list:
    """Every record's value (text), in every batch."""
    index = observation.columns.index("value")
    return [row[index] for batch in observation.batches for row in batch.rows]


def parsed(value):
    """A value as JSON (a dict), or None when it is not a JSON object."""
    try:
        record = json.loads(value)
    except (TypeError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def not_json(mine, wanted) -> bool:
    """Some value is not a JSON object: '{E1, U1, ...}' is a struct cast to string."""
    return any(value is not None and parsed(value) is None for value in values(mine))


def null_fields_left_out(mine, wanted) -> bool:
    """Some event's JSON lacks a field that is null in the expected one."""
    expected = {record["event_id"]: record for record in map(parsed, values(wanted))}
    for record in map(parsed, values(mine)):
        if record is None or record.get("event_id") not in expected:
            continue
        nulls = {name for name, value in expected[record["event_id"]].items() if value is None}
        if nulls - set(record):
            return True
    return False


def no_key(mine, wanted) -> bool:
    """Every record's key is null, where the expected ones have keys."""
    index = mine.columns.index("key")
    keys = [row[index] for batch in mine.batches for row in batch.rows]
    return bool(keys) and all(key is None for key in keys)


EXERCISE = Exercise(
    title="Kafka records with headers",
    kind="build",
    practises="the Kafka sink's record: a key that picks the partition, a JSON value that keeps "
    "null fields, and headers as an array of (string key, binary value) structs",
    function="to_kafka_records",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run,
    kafka=True,  # the tests give the check their own broker
    check_watermark=False,  # not an exercise about watermarks: a harmless one is no failure
    check_dropped=False,
    why=(
        "The Kafka sink writes whatever columns named key, value and headers hold, and nothing "
        "else: Kafka itself knows only bytes. A string key or value is written as its UTF-8 "
        "bytes, so 'Zoë' reaches the topic as the bytes a consumer decodes back to 'Zoë', and "
        "the key's hash picks the partition, which keeps one user's events in one partition, "
        "in order. Headers are an ordered list of (name, bytes) pairs, where a name may repeat: "
        "hence array<struct<key: string, value: binary>>, not a map. to_json(struct(...)) "
        "writes the value as real JSON, and ignoreNullFields=false keeps a null field in it, so "
        "every record has the same fields."
    ),
    hints=[
        "Kafka stores only bytes: what must each of the three columns hold for the sink to "
        "accept it? Headers are a list of (name, value) pairs where a name may repeat: which "
        "Spark type is that, and what type must each value be? And what does to_json do with a "
        "field that is null?",
        "lesson 08, to_kafka_record: key from user_id, value from "
        "F.to_json(F.struct(*columns)). The headers column's type is in lesson 08's docstring "
        "(What you'll learn, writing to Kafka) and in QUICK_REFERENCE (Sinks, Kafka): "
        "array<struct<key: string, value: binary>>.",
        "QUICK_REFERENCE (Sinks, Kafka) builds a headers column with one pair: F.struct of a "
        "name (a literal, aliased key) and a value cast to binary (aliased value), inside "
        "F.array; a record here carries two pairs. The same row names the to_json option that "
        "keeps a null field in the JSON.",
    ],
    scenarios=[
        # Zoë is not ASCII (her key is 4 bytes); E3 has no category and E5, a view of no
        # product, has five null fields: each must be in the JSON, as null.
        Scenario(
            [
                [
                    event("E1", "U1", "view", "10:30:00", "P001", "Laptop", "Tech", 1299.99, 1),
                    event("E2", "Zoë", "cart", "10:30:05", "P002", "Coffee Mug", "Home", 12.5, 2),
                    event("E3", "U2", "purchase", "10:30:07", "P003", "Desk Lamp", None, 45.0, 1),
                ],
                [
                    event("E4", "U1", "purchase", "10:31:00", "P001", "Laptop", "Tech", 1199.99, 1),
                    event("E5", "Zoë", "view", "10:31:02", None, None, None, None, None),
                ],
            ]
        ),
        # Other ids, read scrambled: a user id in Chinese characters, a product name with
        # quotes and a backslash (JSON escapes them), a purchase with no price, one with no
        # quantity.
        Scenario(
            [
                [
                    event(
                        "X1",
                        "用户-7",
                        "view",
                        "11:00:00",
                        "K-10",
                        'Mug "Best" \\ 2',
                        "Home",
                        9.5,
                        1,
                    ),
                    event(
                        "X2", "USER-3", "purchase", "11:00:01", "K-11", "Toaster", "Home", None, 3
                    ),
                    event(
                        "X3",
                        "用户-7",
                        "cart",
                        "11:00:02",
                        "K-10",
                        'Mug "Best" \\ 2',
                        "Home",
                        9.5,
                        2,
                    ),
                ],
                [
                    event(
                        "X4", "USER-3", "purchase", "11:00:05", "K-12", "Kettle", None, 30.0, None
                    ),
                    event("X5", "Ana", "view", "11:00:06", "K-11", "Toaster", "Home", 25.0, 1),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "headers_as_map",
            "The Kafka sink refuses headers as a map: Kafka's headers are an ordered list in "
            "which a name may repeat. Build an array of structs, each with a string key and a "
            "binary value: F.array(F.struct(<name>.alias('key'), <bytes>.alias('value')), ...).",
            error=r"headers attribute unsupported type map<",
        ),
        Mistake(
            "string_header_values",
            "The Kafka sink refuses the headers: their values are strings, and Kafka's header "
            "values are bytes (array<struct<key: string, value: binary>>). cast('binary') turns "
            "a string into its UTF-8 bytes.",
            error=r"headers attribute unsupported type array<struct<key:string,value:string>>",
        ),
        Mistake(
            "struct_as_string",
            "The values are not JSON: '{E1, U1, view, ...}' is what a struct cast to string "
            "looks like (the sink takes only a string or binary value). Write the event with "
            "to_json(struct(...)), which names every field and quotes the strings.",
            when=not_json,
        ),
        Mistake(
            "null_fields_left_out",
            "Some event's JSON lacks a field that is null in it (category, price...): to_json "
            "leaves null fields out by default. The task wants every field, null as null: "
            "to_json(..., {'ignoreNullFields': 'false'}).",
            when=null_fields_left_out,
        ),
        Mistake(
            "no_key",
            "Every record has a null key. Without a key the producer picks a partition by "
            "itself (the same one for a while, then another), so nothing keeps one user's "
            "events in one partition, in order (and a compacted topic refuses a record without "
            "a key). Give each record its user_id as the key.",
            when=no_key,
        ),
    ],
)
