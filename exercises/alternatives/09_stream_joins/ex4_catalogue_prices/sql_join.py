"""Another right answer: the join in SQL, with the two DataFrames passed to spark.sql as named
arguments (Spark makes each a view for the query) and each side's columns named by alias."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


def enrich_events(events: DataFrame, products: DataFrame) -> DataFrame:
    return events.sparkSession.sql(
        """
        SELECT e.event_id, e.product_id, e.quantity, e.price AS paid_price,
               p.product_name, p.price AS list_price,
               (p.price - e.price) * e.quantity AS discount
        FROM {events} AS e
        LEFT OUTER JOIN {products} AS p ON e.product_id = p.product_id
        """,
        events=events,
        products=products,
    )
