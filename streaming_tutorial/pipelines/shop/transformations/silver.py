"""Silver: the bronze lines parsed and validated; a bad line goes to a quarantine table with its reason.

Open-source Spark Declarative Pipelines has no expectations (the Databricks feature that drops
or counts rows failing a rule), so the quarantine is a second streaming table over the same
parse: every bronze line lands in exactly one of the two.
"""

from pyspark import pipelines as dp

from common import parsing
from common.schemas import ECOMMERCE_EVENT_SCHEMA

spark = globals()["spark"]  # set by spark-pipelines
BRONZE_COLUMNS = ("value", "source_file")  # what bronze_events holds (bronze.py)


def parsed_lines():
    """The new bronze lines, each with its fields and a quarantine_reason (null for a good event)."""
    # The columns are named: asking a DataFrame for them analyses it, which a definition may not do.
    return parsing.parse_json(
        spark.readStream.table("bronze_events"), ECOMMERCE_EVENT_SCHEMA, columns=BRONZE_COLUMNS
    )


@dp.table(
    comment="Good shop events: the ECOMMERCE_EVENT_SCHEMA columns and the file each came from"
)
def silver_events():
    return parsing.valid_records(parsed_lines(), ECOMMERCE_EVENT_SCHEMA, "source_file")


@dp.table(comment="Lines that are no usable event, kept whole with the reason")
def silver_quarantine():
    return parsing.quarantined(parsed_lines(), "source_file")
