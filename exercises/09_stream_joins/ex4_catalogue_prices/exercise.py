"""Exercise 09.4 · Catalogue prices (build) — practises lesson 09, a stream-static left join.

Enrich a stream of shop events with the product catalogue, a static DataFrame read from a
Delta table. EVERY event comes out once: with its product's catalogue name and list price
when the catalogue knows its product_id, with nulls when it does not (an unknown id, an event
without a product). Ids match exactly: p001 is not P001.

Both sides have columns called product_name, category and price. The event's price is what the
customer paid per unit; the catalogue's price is the list price. The event's product_name is
what the shop's page showed, which may be stale: take the name from the catalogue.

The catalogue changes while the query runs (a price cut, a new product): each micro-batch
must use the catalogue as it is when that batch runs.

Expected columns, in this order:
  event_id       the event
  product_id     the event's product_id (null if it has none)
  quantity       the event's quantity
  paid_price     the event's price
  product_name   the catalogue's name of the product, or null
  list_price     the catalogue's price of the product, or null
  discount       (list_price - paid_price) * quantity: what the customer saved, or null

Input: events, a stream with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id, user_id,
event_type, product_id, product_name, category, price, quantity, timestamp), and products, a
static DataFrame with CATALOGUE_SCHEMA below (one row per product_id).

The check takes about 10 seconds (measured on 2 cores).

Check it:  python course.py exercises check 09.4
Stuck?     python course.py exercises hint 09.4
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

# The catalogue's columns (the check writes it as a Delta table and reads it for you).
CATALOGUE_SCHEMA = "product_id STRING, product_name STRING, category STRING, price DOUBLE"


def enrich_events(events: DataFrame, products: DataFrame) -> DataFrame:
    """Every event, with its product's catalogue name, list price and discount (or nulls)."""
    raise NotImplementedError("TODO: write the join")
