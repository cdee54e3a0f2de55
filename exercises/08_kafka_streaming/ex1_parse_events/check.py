import base64
import json

from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from practice.scenarios import at
from practice.spec import Exercise, Mistake, Scenario

# The columns of a Kafka source's rows, with their types: key and value are bytes.
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
TOPIC = "shop-events"


def event(event_id, user, kind, time_of_day, **fields) -> str:
    """A shop event's JSON text, as the producer writes it (only the fields given)."""
    record = {"event_id": event_id, "user_id": user, "event_type": kind, **fields}
    record["timestamp"] = at(time_of_day)
    return json.dumps(record, separators=(",", ":"))


def as_bytes(text: str | bytes | None) -> str | None:
    """A key or value as the JSON file holds bytes: base64, which Spark's JSON reader decodes
    into a BINARY column (Kafka's type). Text is UTF-8 encoded first, as producers do."""
    if text is None:
        return None
    data = text.encode("utf-8") if isinstance(text, str) else text
    return base64.b64encode(data).decode("ascii")


def message(partition, offset, key, value, time_of_day) -> dict:
    """One Kafka row: the key and value (text, bytes or None) at ``offset`` of ``partition``,
    with CreateTime (timestampType 0)."""
    return {
        "key": as_bytes(key),
        "value": as_bytes(value),
        "topic": TOPIC,
        "partition": partition,
        "offset": offset,
        "timestamp": at(time_of_day),
        "timestampType": 0,
    }


def reasons_of(observation):
    """Every quarantine_reason the observation holds, in any batch."""
    index = observation.columns.index("quarantine_reason")
    return [row[index] for batch in observation.batches for row in batch.rows]


def drops_bad_records(mine, wanted):
    """There is a reason column, but no row with a reason: the bad records were filtered out."""
    if "quarantine_reason" not in mine.columns:
        return False
    return any(reasons_of(wanted)) and not any(reasons_of(mine))


def no_source_position(mine, wanted):
    """The Kafka partition and offset are not kept (as source_partition, source_offset)."""
    return "source_partition" not in mine.columns or "source_offset" not in mine.columns


def no_reason(mine, wanted):
    return "quarantine_reason" not in mine.columns


EXERCISE = Exercise(
    title="Parse Kafka events",
    kind="build",
    practises="Kafka rows: cast the value to text, parse it with a schema, keep bad records "
    "with their reason, partition and offset",
    function="parse_events",
    schemas=KAFKA_SCHEMA,
    check_watermark=False,  # not an exercise about watermarks: a harmless one is no failure
    output_mode="append",
    mirrors="08_kafka_streaming:parse_events",
    why=(
        "Kafka knows nothing of your data: a key and a value are bytes, so they are cast to "
        "string before from_json can read them. Parsed with a schema in PERMISSIVE mode, a "
        "value that does not fit never fails the query: its row stays, with null fields and a "
        "reason, rather than stopping the stream or vanishing. Topic, partition and offset name "
        "a record uniquely in Kafka, so a quarantined record can be found and replayed from "
        "there."
    ),
    hints=[
        "Which columns of a Kafka row are bytes, and what must happen to bytes before a JSON "
        "parser can read them? If a value cannot be parsed, what must its row still carry so that "
        "someone can find the original message in Kafka?",
        "lesson 08, `parse_events`: one select casts the key and the value to text and renames "
        "topic, partition, offset and timestamp to say where a message came from; then "
        "parsing.parse_json adds the event's fields and the reason.",
        "A cast never fails: a null value (a tombstone) or bytes that are not UTF-8 keep their "
        "row. parse_json keeps every column it is given and filters nothing: return its result as "
        "it is, with the columns named and ordered as the exercise lists them (timestampType is "
        "not one of them).",
    ],
    scenarios=[
        # Partition 0 offset 1 is cut off (the producer's --malformed-every), partition 1
        # offset 1 has no user_id (and no key), partition 1 offset 2 a negative price: all three
        # stay, with their reason.
        Scenario(
            [
                [
                    message(0, 0, "U1", event("E1", "U1", "view", "10:30:00"), "10:30:01"),
                    message(
                        1,
                        0,
                        "U2",
                        event("E2", "U2", "purchase", "10:30:01", price=25.0, quantity=2),
                        "10:30:02",
                    ),
                    message(0, 1, "U1", event("E3", "U1", "cart", "10:30:02")[:30], "10:30:03"),
                    message(1, 1, None, event("E4", None, "view", "10:30:04"), "10:30:04"),
                    message(0, 2, "U1", event("E5", "U1", "cart", "10:30:05"), "10:30:05"),
                ],
                [
                    message(
                        1,
                        2,
                        "U2",
                        event("E6", "U2", "purchase", "10:30:06", price=-5.0, quantity=1),
                        "10:30:07",
                    ),
                    message(0, 3, "U1", event("E7", "U1", "view", "10:30:08"), "10:30:08"),
                ],
            ]
        ),
        # Other bad values: a null value (a tombstone), two records in one value, a quantity
        # that is a word, a timestamp that is not one, bytes that are not text.
        Scenario(
            [
                [
                    message(2, 10, "USER-7", None, "11:00:00"),
                    message(
                        2, 11, "USER-7", event("EV-20", "USER-7", "view", "11:00:01"), "11:00:01"
                    ),
                    message(
                        0,
                        40,
                        "USER-3",
                        event("EV-21", "USER-3", "view", "11:00:02")
                        + event("EV-22", "USER-3", "view", "11:00:02"),
                        "11:00:03",
                    ),
                    message(
                        1,
                        41,
                        "USER-5",
                        event("EV-23", "USER-5", "purchase", "11:00:04", price=3.5, quantity="two"),
                        "11:00:04",
                    ),
                ],
                [
                    message(
                        2,
                        12,
                        "USER-7",
                        event("EV-24", "USER-7", "cart", "11:00:05").replace(
                            at("11:00:05"), "yesterday"
                        ),
                        "11:00:06",
                    ),
                    message(
                        0, 42, "USER-3", event("EV-25", "USER-3", "cart", "11:00:06"), "11:00:07"
                    ),
                    # Bytes that are no UTF-8 text, and a key that is not one either.
                    message(1, 43, b"\xc3\x28", b"\xff\xfe\x00\x01", "11:00:08"),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "drops_bad_records",
            "The bad records are dropped: no row has a quarantine_reason. A value that cannot be "
            "used must be kept, with its reason, so it can go to a quarantine and be fixed; "
            "return parse_json's result without filtering it.",
            when=drops_bad_records,
        ),
        Mistake(
            "no_source_position",
            "Where each message came from is lost: keep Kafka's topic, partition, offset and "
            "timestamp as source_topic, source_partition, source_offset and kafka_timestamp. "
            "Without the partition and the offset, nobody can find a bad record in Kafka.",
            when=no_source_position,
        ),
        Mistake(
            "no_reason",
            "There is no quarantine_reason: from_json alone turns a value it cannot parse into a "
            "row of nulls, indistinguishable from an event with empty fields. Parse with "
            "parsing.parse_json(text, ECOMMERCE_EVENT_SCHEMA), which adds the reason.",
            when=no_reason,
        ),
    ],
)
