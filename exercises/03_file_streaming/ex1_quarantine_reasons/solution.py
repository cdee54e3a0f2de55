"""Exercise 03.1 · Parse and quarantine — a reference solution."""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from common.schemas import TRANSACTION_SCHEMA

REASON_COLUMN = "quarantine_reason"  # why a line cannot be used; null for a good transaction
# Working columns of the parse, read by quarantine_reason() and then dropped.
RECORD_COLUMN = "_record"  # the line parsed with the schema's types
AS_TEXT_COLUMN = "_as_text"  # the line parsed with every field as text
# from_json's schemas: the transaction's fields with their types, and every field as text.
RECORD_SCHEMA = StructType(
    [StructField(field.name, field.dataType) for field in TRANSACTION_SCHEMA.fields]
)
AS_TEXT_SCHEMA = StructType(
    [StructField(field.name, StringType()) for field in TRANSACTION_SCHEMA.fields]
)


def parse_transactions(lines: DataFrame) -> DataFrame:
    """Each line, its transaction's fields, and why the line cannot be used (or null)."""
    # from_json never fails the query: a value that does not fit becomes null.
    parsed = (
        lines.withColumn(RECORD_COLUMN, F.from_json(F.col("value"), RECORD_SCHEMA))
        # The same line with every field as text: tells "absent" from "of the wrong type".
        .withColumn(AS_TEXT_COLUMN, F.from_json(F.col("value"), AS_TEXT_SCHEMA))
    )
    fields = [
        F.col(f"{RECORD_COLUMN}.{name}").alias(name) for name in TRANSACTION_SCHEMA.fieldNames()
    ]
    # Every line stays, the bad ones with their reason: a quarantine can keep them.
    return parsed.select(*lines.columns, *fields, quarantine_reason().alias(REASON_COLUMN))


def quarantine_reason() -> Column:
    """Why a parsed line is not a usable transaction, or null when it is. The first reason wins."""
    line = F.col("value")
    amount = F.col(f"{RECORD_COLUMN}.amount")
    return (
        F.when(line.isNull() | (F.trim(line) == ""), "empty line")
        # json_object_keys is null unless the line starts with one JSON object. (Lesson 03
        # also catches text after the object; these lines have none.)
        .when(F.json_object_keys(line).isNull(), "not a JSON object")
        .when(absent("transaction_id"), "missing transaction_id")
        .when(absent("user_id"), "missing user_id")
        .when(absent("amount"), "missing amount")
        .when(wrong_type("amount"), "amount is not a number")
        # The schema's metadata states the range: money is never negative ({"min": 0}).
        .when(amount < 0, "amount below 0")
        # category is optional: absent, null or any text will do. (Lesson 03 also quarantines
        # a value of another JSON type, "category is not a string"; no line here has one.)
        .when(absent("timestamp"), "missing timestamp")
        .when(wrong_type("timestamp"), "timestamp is not a date and time")
    )


def absent(field: str) -> Column:
    """The field is not in the line, is JSON null, or is blank."""
    given = F.col(f"{AS_TEXT_COLUMN}.{field}")
    return given.isNull() | (F.trim(given) == "")


def wrong_type(field: str) -> Column:
    """The field is in the line, but from_json could not read it as the schema's type."""
    return F.col(f"{RECORD_COLUMN}.{field}").isNull() & ~absent(field)
