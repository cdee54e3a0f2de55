"""Exercise 03.1 · Parse and quarantine (build) — practises lesson 03, parsing lines with a reason.

A file stream read as text gives one row per line, in a single string column ``value``. Parse
each line against TRANSACTION_SCHEMA, as lesson 03's parse_transactions does: keep every line,
good or bad, and say why a bad one cannot be used. A line is never dropped and never stops the
query.

Expected columns, in this order:
  value                  the line, as read
  transaction_id, user_id, amount, category, timestamp
                         the line's fields with the schema's types, as from_json parses them:
                         null where a field is absent or its value cannot be read as that type
  quarantine_reason      why the line cannot be used, or null for a good transaction

The reasons, checked in this order (the first that applies wins):
  "empty line"                        the line is empty or only spaces
  "not a JSON object"                 any other line that is not a JSON object: plain text,
                                      a cut-off line, a list
  "missing transaction_id"            a required field (nullable=False in the schema) that
  "missing user_id"                   is absent, JSON null or blank ("  "), checked in the
  "missing amount"                    schema's order...
  "amount is not a number"            ...amount is there, but not a number ("abc", "12.5")
  "amount below 0"                    ...a negative amount
  "missing timestamp"
  "timestamp is not a date and time"  the timestamp is there, but Spark cannot read it
category is optional: absent, null or any text will do. (Lesson 03 checks more: each value's
JSON type, since from_json reads 7 into a text field as "7" without a word, so a category
of 7 is "category is not a string" there; these lines need only the reasons above.)

Input: a stream of lines, one string column ``value`` (what spark.readStream.format("text")
gives; the check feeds the lines as JSON records {"value": "<line>"}).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 03.1
Stuck?     python course.py exercises hint 03.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)
from pyspark.sql.types import StringType, StructField, StructType  # noqa: F401

from common.schemas import TRANSACTION_SCHEMA  # noqa: F401

REASON_COLUMN = "quarantine_reason"  # why a line cannot be used; null for a good transaction


def parse_transactions(lines: DataFrame) -> DataFrame:
    """Each line, its transaction's fields, and why the line cannot be used (or null)."""
    raise NotImplementedError("TODO: write the parse and the reasons")
