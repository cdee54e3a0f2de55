"""Another right answer: common.parsing.parse_json is the lesson's parse, generalised to any schema
(tests check that it gives every line lesson 03's verdict); for TRANSACTION_SCHEMA it returns
value, the five fields and quarantine_reason, with the same reason texts ('missing amount',
'amount is not a number', 'amount below 0', 'timestamp is not a date and time', ...)."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)
from pyspark.sql.types import StringType, StructField, StructType  # noqa: F401

from common import parsing
from common.schemas import TRANSACTION_SCHEMA  # noqa: F401

REASON_COLUMN = "quarantine_reason"  # why a line cannot be used; null for a good transaction


def parse_transactions(lines: DataFrame) -> DataFrame:
    """Each line, its transaction's fields, and why the line cannot be used (or null)."""
    # Lesson 03's parse, as the course reuses it from common/parsing.py.
    return parsing.parse_json(lines, TRANSACTION_SCHEMA)
