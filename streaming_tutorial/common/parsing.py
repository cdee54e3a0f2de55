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
every value must have its field's JSON type (a string for text and for a date and time, a
number for a number, true or false...: checked on the raw JSON, since from_json alone reads
7 into a text field as "7" and a number into a timestamp as epoch seconds), and a field's
metadata may state its range (``{"min": 0}``). Every bad record gets one reason a learner can
act on ("missing user_id", "user_id is not a string", "amount below 0", "not valid UTF-8",
...; see ``quarantine_reason``); fields the schema does not name are ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    MapType,
    NumericType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

from common import paths

CORRUPT_COLUMN = "_corrupt_record"  # from_json puts the text of a record that does not fit here
# Working columns of parse_json, read by quarantine_reason (not in its result).
JSON_COLUMN = "_json"  # the line without a byte-order mark
RECORD_COLUMN = "_record"  # the line parsed with the schema's types
AS_JSON_COLUMN = "_as_json"  # the line parsed with every field as a VARIANT: its JSON value
JSON_TYPES_COLUMN = "_json_types"  # the JSON type of each field's value: STRING, BIGINT...
KEYS_COLUMN = "_keys"  # the object's keys, in their order (a key given twice, twice)
BYTE_ORDER_MARK = "\ufeff"  # U+FEFF: some editors write it at the start of a UTF-8 file
# How deeply nested a line may be: Spark's JSON parser (Jackson) reads 1000 levels, and the
# check that a line holds one object wraps it in [ ], one level more.
MAX_JSON_DEPTH = 999
# How a reason names the type a field should have had: "amount is not a number".
TYPE_WORDS = {
    StringType: "a string",
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
    ArrayType: "a list",
    StructType: "an object",
    MapType: "an object",
}
# The JSON value each type must be given, as schema_of_variant names it (a JSON number is
# BIGINT, DECIMAL(p,s) or DOUBLE; null is VOID). from_json alone accepts more, silently: any
# value in a text field (7 as "7", an object as its text), a number in a timestamp (as epoch
# seconds), a string in a decimal ("7"). A date or a time must be a string Spark can read.
NUMBER = r"^(BIGINT|DECIMAL|DOUBLE)"
JSON_TYPES = {
    StringType: "^STRING$",
    NumericType: NUMBER,
    BooleanType: "^BOOLEAN$",
    TimestampType: "^STRING$",
    TimestampNTZType: "^STRING$",
    DateType: "^STRING$",
    ArrayType: "^ARRAY<",
    StructType: "^OBJECT<",
    MapType: "^OBJECT<",
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
    The line is parsed twice: with the schema's types, and with every field as a VARIANT, which
    keeps the JSON type each value was given (a number, a string...) for quarantine_reason.
    """
    # The rows carry plain columns: a field's metadata (its range) is read by quarantine_reason
    # only.
    fields = [StructField(field.name, field.dataType) for field in schema.fields]
    with_corrupt = StructType(fields + [StructField(CORRUPT_COLUMN, StringType())])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN}
    # Every field once more as its JSON value: null when the field is absent, a VARIANT null
    # for JSON null, else the value with its JSON type, whatever the schema's type.
    as_json = StructType([StructField(field.name, VariantType()) for field in schema.fields])
    parsed = (
        lines.withColumn(JSON_COLUMN, F.regexp_replace(F.col(text), f"^{BYTE_ORDER_MARK}", ""))
        .withColumn(RECORD_COLUMN, F.from_json(F.col(JSON_COLUMN), with_corrupt, options))
        .withColumn(AS_JSON_COLUMN, F.from_json(F.col(JSON_COLUMN), as_json, options))
        # Each field's JSON type once per line (several checks read it), and the keys in order.
        .withColumn(JSON_TYPES_COLUMN, json_types(schema))
        .withColumn(KEYS_COLUMN, F.json_object_keys(F.col(JSON_COLUMN)))
    )
    values = [
        F.col(RECORD_COLUMN).getField(field.name).alias(field.name) for field in schema.fields
    ]
    kept = lines.columns if columns is None else columns
    return parsed.select(*kept, *values, quarantine_reason(schema, text).alias(REASON_COLUMN))


def quarantine_reason(schema: StructType, text: str = "value") -> Column:
    """Why a parsed record cannot be used, or null when it is good. The first reason wins.

    In this order, the line: "empty line", "not valid UTF-8", "not a JSON object", "text
    after the JSON object", "nested more than 999 levels deep", "<field> appears twice" (a
    field of the schema given twice: from_json would keep one of them silently); then each
    field in the schema's order: "missing <field>" for a required field (``nullable=False``)
    that is absent, null or blank; "<field> is not a finite number" for 1e400, NaN or
    "Infinity" where the field is a plain number; "<field> does not fit in int" for too many
    digits; "<field> is not a number" (a string, a whole number, a date and time...) for a
    value of another JSON type than the field's, or one Spark cannot read as it; "<field>
    below <min>" or "<field> above <max>" for a value outside the range the field's metadata
    states (``StructField("amount", DoubleType(), metadata={"min": 0})``).
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
    # The first field of the schema (in its order) given twice, or null: array_remove takes out
    # every copy of a key, more than one gone and it was there twice.
    keys = F.col(KEYS_COLUMN)
    twice = F.coalesce(
        *[
            F.when(F.size(keys) - F.size(F.array_remove(keys, name)) > 1, F.lit(name))
            for name in schema.fieldNames()
        ]
    )
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
        .when(twice.isNotNull(), F.concat(twice, F.lit(" appears twice")))
    )
    for field in schema.fields:
        for problem, why in field_problems(field):
            reason = reason.when(problem, F.lit(why))
    # Spark marked the record corrupt and no check above said why: still not usable.
    return reason.when(
        F.col(RECORD_COLUMN).getField(CORRUPT_COLUMN).isNotNull(),
        F.lit("a field has the wrong type"),
    )


def json_types(schema: StructType) -> Column:
    """Each field's JSON type as the line gives it: STRING, BIGINT, DECIMAL(5,2), DOUBLE, BOOLEAN,
    OBJECT<...>, ARRAY<...>, VOID for null; null when the field is absent."""
    given = F.col(AS_JSON_COLUMN)
    return F.struct(
        *[F.schema_of_variant(given.getField(field.name)).alias(field.name) for field in schema]
    )


def json_type_of(spark_type: DataType) -> str | None:
    """The pattern of the JSON type a value of ``spark_type`` must have (see JSON_TYPES)."""
    for kind, pattern in JSON_TYPES.items():
        if isinstance(spark_type, kind):
            return pattern
    return None  # a type JSON has no value for (binary...): from_json alone decides


def field_problems(field: StructField) -> list[tuple[Column, str]]:
    """(condition, reason) for each way one field of a parsed record can be unusable, in order."""
    name, kind = field.name, field.dataType
    value, given = F.col(RECORD_COLUMN).getField(name), F.col(AS_JSON_COLUMN).getField(name)
    # The JSON type of the value as given: STRING, BIGINT, OBJECT<...>, VOID for null...
    given_type = F.col(JSON_TYPES_COLUMN).getField(name)
    blank = (given_type == "STRING") & (F.trim(F.try_variant_get(given, "$", "string")) == "")
    absent = given_type.isNull() | (given_type == "VOID") | blank
    problems = [] if field.nullable else [(absent, f"missing {name}")]
    if isinstance(kind, (DoubleType, FloatType)):
        # 1e400 parses as Infinity, "NaN" as NaN: numbers no real amount or reading can be.
        infinite = F.isnan(value) | F.abs(value).eqNullSafe(F.lit(float("inf")))
        problems.append((infinite, f"{name} is not a finite number"))
    # A value of another JSON type than the field's, or one Spark cannot read as the field's
    # type (2.5 as a whole number, "yesterday" as a date and time).
    pattern = json_type_of(kind)
    unreadable = value.isNull()
    if pattern is not None:
        unreadable = unreadable | ~given_type.rlike(pattern)
    wrong_type = ~absent & unreadable
    if isinstance(kind, IntegralType):
        # A whole number that the type cannot hold. (VARIANT writes 1.0 as 1: that one fits, and
        # is not a whole number to from_json.)
        digits = given_type.rlike(NUMBER) & F.to_json(given).rlike(r"^-?[0-9]+$")
        too_big = wrong_type & digits & F.try_variant_get(given, "$", kind.simpleString()).isNull()
        problems.append((too_big, f"{name} does not fit in {kind.simpleString()}"))
    problems.append(
        (wrong_type, f"{name} is not {TYPE_WORDS.get(type(kind), kind.simpleString())}")
    )
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
