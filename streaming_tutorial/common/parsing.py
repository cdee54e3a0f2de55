"""JSON records parsed with a quarantine reason: lesson 03 teaches it, later lessons reuse it.

Every streaming source of JSON in the course reads *text* first (the lesson writes that
source out: ``spark.readStream.format("text")`` or Kafka's value cast to a string) and parses
it here with ``from_json``: a line that cannot be used is never lost and never stops the
query. It keeps its raw text and gets a ``quarantine_reason`` (null for a good record), so the
lesson can send it to a quarantine and count it::

    parsed = parse_json(lines, ECOMMERCE_EVENT_SCHEMA)
    good = valid_records(parsed, ECOMMERCE_EVENT_SCHEMA)
    bad = quarantined(parsed)

Lesson 03 writes the same parse out for its own schema, step by step
(tests/lessons/test_03_parsing_agrees.py checks that both give every line the same verdict).

The schema itself says what a good record is: a field with ``nullable=False`` is required,
and a field's metadata may state its range (``{"min": 0}``). Every bad record gets one
reason a learner can act on ("missing user_id", "amount below 0", "not valid UTF-8", ...;
see ``quarantine_reason``); fields the schema does not name are ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from common import paths

CORRUPT_COLUMN = "_corrupt_record"  # from_json puts the text of a record that does not fit here
# Working columns of parse_json, read by quarantine_reason (not in its result).
JSON_COLUMN, RECORD_COLUMN, AS_TEXT_COLUMN = "_json", "_record", "_as_text"
BYTE_ORDER_MARK = "\ufeff"  # U+FEFF: some editors write it at the start of a UTF-8 file
# How deeply nested a line may be: Spark's JSON parser (Jackson) reads 1000 levels, and the
# check that a line holds one object wraps it in [ ], one level more.
MAX_JSON_DEPTH = 999
# How a reason names the type a field should have had: "amount is not a number".
TYPE_WORDS = {
    DoubleType: "a number",
    FloatType: "a number",
    DecimalType: "a number",
    IntegerType: "a whole number",
    LongType: "a whole number",
    ShortType: "a whole number",
    ByteType: "a whole number",
    TimestampType: "a date and time",
    TimestampNTZType: "a date and time",
    DateType: "a date",
    BooleanType: "true or false",
}
TOO_DEEP = f"nested more than {MAX_JSON_DEPTH} levels deep"
REASON_COLUMN = "quarantine_reason"
QUARANTINE_SCHEMA = (
    "reason STRING, raw_line STRING"  # what every quarantine holds (plus any kept columns)
)


def parse_json(
    lines: DataFrame,
    schema: StructType,
    *,
    text: str = "value",
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """Add the record's fields (parsed from the ``text`` column) and its ``quarantine_reason``.

    The result keeps the input's ``columns`` (default: all of them). Naming them spares asking
    ``lines`` for its columns, which analyses it: a Spark Declarative Pipeline refuses that
    inside a table's definition (lesson 18).

    PERMISSIVE parsing never fails the query: a record that does not fit the schema
    comes back with nulls, and its text in ``_corrupt_record``. Fields the schema does not
    name are ignored. A byte-order mark at the start of the text is not content: it is
    skipped (the file source already skips one at the start of a file; a Kafka value keeps it).
    """
    # The rows carry plain columns: a field's metadata (its range) is read by quarantine_reason
    # only.
    fields = [StructField(field.name, field.dataType) for field in schema.fields]
    with_corrupt = StructType(fields + [StructField(CORRUPT_COLUMN, StringType())])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN}
    # Every field once more as text: null when the field is absent or JSON null, its text when it is
    # there. A field null in _record but present here has a value of the wrong type.
    as_text = StructType([StructField(field.name, StringType()) for field in schema.fields])
    parsed = (
        lines.withColumn(JSON_COLUMN, F.regexp_replace(F.col(text), f"^{BYTE_ORDER_MARK}", ""))
        .withColumn(RECORD_COLUMN, F.from_json(F.col(JSON_COLUMN), with_corrupt, options))
        .withColumn(AS_TEXT_COLUMN, F.from_json(F.col(JSON_COLUMN), as_text, options))
    )
    values = [F.col(f"{RECORD_COLUMN}.{field.name}").alias(field.name) for field in schema.fields]
    kept = lines.columns if columns is None else columns
    return parsed.select(*kept, *values, quarantine_reason(schema, text).alias(REASON_COLUMN))


def quarantine_reason(schema: StructType, text: str = "value") -> Column:
    """Why a parsed record cannot be used, or null when it is good. The first reason wins.

    In this order, the line: "empty line", "not valid UTF-8", "not a JSON object", "text
    after the JSON object", "nested more than 999 levels deep"; then each field in the
    schema's order: "missing <field>" for a required field (``nullable=False``) that is
    absent, null or blank; "<field> is not a number" (a whole number, a date and time...)
    for a value of the wrong type, "<field> does not fit in int" for too many digits;
    "<field> is not a finite number" for 1e400 or NaN; "<field> below <min>" or
    "<field> above <max>" for a value outside the range the field's metadata states
    (``StructField("amount", DoubleType(), metadata={"min": 0})``).
    Needs the columns ``parse_json`` adds; the reason texts are shown to learners.
    """
    line, json_text = F.col(text), F.col(JSON_COLUMN)
    # One JSON object: it starts with {, and [ + line + ] is an array of exactly one value. (A
    # cut-off line, plain text or a list fails; so does a second record or any text after the first,
    # which from_json would silently drop.)
    one_object = json_text.rlike(r"^\s*\{") & (
        F.json_array_length(F.concat(F.lit("["), json_text, F.lit("]"))) == 1
    )
    # Spark's JSON parser refuses a line nested deeper than MAX_JSON_DEPTH. Such a line holds more
    # than that many brackets; a cut-off or non-JSON line almost never does.
    brackets = F.length(line) - F.length(F.translate(line, "[{", ""))
    reason = (
        F.when(line.isNull() | (F.trim(line) == ""), F.lit("empty line"))
        # Spark keeps the bytes of a line as they are; bad UTF-8 would reach the rows as U+FFFD.
        .when(~F.is_valid_utf8(line), F.lit("not valid UTF-8"))
        .when(
            ~one_object.eqNullSafe(True),
            F.when(brackets > MAX_JSON_DEPTH, F.lit(TOO_DEEP))
            # json_object_keys reads the first JSON value only: an object there, then more.
            .when(F.json_object_keys(json_text).isNotNull(), F.lit("text after the JSON object"))
            .otherwise(F.lit("not a JSON object")),
        )
    )
    for field in schema.fields:
        for problem, why in field_problems(field):
            reason = reason.when(problem, F.lit(why))
    # Spark marked the record corrupt and no check above said why: still not usable.
    return reason.when(
        F.col(f"{RECORD_COLUMN}.{CORRUPT_COLUMN}").isNotNull(), F.lit("a field has the wrong type")
    )


def field_problems(field: StructField) -> list[tuple[Column, str]]:
    """(condition, reason) for each way one field of a parsed record can be unusable, in order."""
    name, kind = field.name, field.dataType
    value, given = F.col(f"{RECORD_COLUMN}.{name}"), F.col(f"{AS_TEXT_COLUMN}.{name}")
    absent = given.isNull() | (F.trim(given) == "")
    problems = [] if field.nullable else [(absent, f"missing {name}")]
    wrong_type = value.isNull() & ~absent
    if isinstance(kind, IntegralType):
        too_big = wrong_type & given.rlike(
            r"^\s*-?[0-9]+\s*$"
        )  # a whole number, but more digits than the type holds
        problems.append((too_big, f"{name} does not fit in {kind.simpleString()}"))
    problems.append(
        (wrong_type, f"{name} is not {TYPE_WORDS.get(type(kind), kind.simpleString())}")
    )
    if isinstance(kind, (DoubleType, FloatType)):
        # 1e400 parses as Infinity, "NaN" as NaN: numbers no real amount or reading can be.
        infinite = F.isnan(value) | F.abs(value).eqNullSafe(F.lit(float("inf")))
        problems.append((infinite, f"{name} is not a finite number"))
    if "min" in field.metadata:
        problems.append(
            (value < F.lit(field.metadata["min"]), f"{name} below {field.metadata['min']}")
        )
    if "max" in field.metadata:
        problems.append(
            (value > F.lit(field.metadata["max"]), f"{name} above {field.metadata['max']}")
        )
    return problems


def require_for(
    parsed: DataFrame, condition: Column, fields: Sequence[str], what: str
) -> DataFrame:
    """Quarantine the records that match ``condition`` but lack one of ``fields``, with a reason.

    For fields the schema lets be null in general that one kind of record needs: a view may have
    no price, a purchase may not ("missing price in a purchase"). Absent, null or blank is
    missing; the first missing field names the reason, and a record that has a reason keeps it.
    """
    missing = None
    for name in fields:
        value = F.col(name)
        check = condition & (value.isNull() | (F.trim(value.cast("string")) == ""))
        why = F.lit(f"missing {name} in {what}")
        missing = F.when(check, why) if missing is None else missing.when(check, why)
    return parsed.withColumn(REASON_COLUMN, F.coalesce(F.col(REASON_COLUMN), missing))


def valid_records(parsed: DataFrame, schema: StructType, *keep: str) -> DataFrame:
    """The good records: the schema's columns, plus any ``keep`` columns (e.g. ``source_file``)."""
    return parsed.where(F.col(REASON_COLUMN).isNull()).select(*schema.fieldNames(), *keep)


def quarantined(parsed: DataFrame, *keep: str, text: str = "value") -> DataFrame:
    """The records that cannot be used, kept whole: the reason and the raw text, plus ``keep``."""
    return parsed.where(F.col(REASON_COLUMN).isNotNull()).select(
        *keep, F.col(REASON_COLUMN).alias("reason"), F.col(text).alias("raw_line")
    )


def quarantine_counts(spark, folder: Path) -> list[tuple[str, int]]:
    """(reason, lines) in a folder ``start_quarantine`` wrote, most frequent first; [] before its
    first batch."""
    if not (folder / "_spark_metadata").is_dir():
        return []
    # The sink's _spark_metadata log lists the files of committed batches only.
    counts = spark.read.schema(QUARANTINE_SCHEMA).json(paths.uri(folder)).groupBy("reason").count()
    return [
        (row.reason, row["count"]) for row in counts.orderBy(F.desc("count"), "reason").collect()
    ]


def quarantine_summary(spark, folder: Path) -> str:
    """What a quarantine folder holds, for the learner: '2 (not a JSON object), 1 (missing
    event_id)' or 'none'."""
    return (
        ", ".join(f"{lines} ({reason})" for reason, lines in quarantine_counts(spark, folder))
        or "none"
    )
