"""Silver: the bronze lines parsed and validated; a bad line goes to a quarantine table.

Each quarantined line keeps its reason. Open-source Spark Declarative Pipelines has no
expectations (the Databricks feature that drops or counts rows failing a rule), so the
quarantine is a second streaming table over the same parse: every bronze line lands in
exactly one of the two.
"""

from pyspark import pipelines as dp

from common import parsing
from common.schemas import ECOMMERCE_EVENT_SCHEMA

spark = globals()["spark"]  # set by spark-pipelines
BRONZE_COLUMNS = ("value", "source_file")  # what bronze_events holds (bronze.py)


def parsed_lines():
    """The new bronze lines, each with its fields and a quarantine_reason (null for a good one)."""
    # A streaming read of the bronze table: each run gets only the lines bronze appended since.
    bronze = spark.readStream.table("bronze_events")
    # Lesson 03 teaches this parse (common/parsing.py): from_json on the text, and a reason for
    # each line no event can be made of. The columns are named: asking a DataFrame for them
    # analyses it, which a definition may not do.
    return parsing.parse_json(bronze, ECOMMERCE_EVENT_SCHEMA, columns=BRONZE_COLUMNS)


@dp.table(
    comment="Good shop events: the ECOMMERCE_EVENT_SCHEMA columns and the file each came from"
)
def silver_events():
    # The lines without a reason, as events: the schema's columns and the file they came from.
    return parsing.valid_records(parsed_lines(), ECOMMERCE_EVENT_SCHEMA, "source_file")


@dp.table(comment="Lines that are no usable event, kept whole with the reason")
def silver_quarantine():
    # The lines with a reason, kept whole: nothing is dropped without a trace.
    return parsing.quarantined(parsed_lines(), "source_file")
