"""Exercise 18.1 · Sales per category, declared (build) — practises lesson 18, a materialized view.

Lesson 18's pipeline ends in gold views over silver_events (pipelines/shop/transformations/
gold.sql). Declare one more, in SQL as gold.sql does: the materialized view
gold_category_sales, one row per product category, with these columns in this order:
  category    the product category
  views       its view events
  carts       its cart events
  purchases   its purchase events
  units       the units purchased: the purchases' quantities added up (0 without a purchase)
  revenue     the purchases' price x quantity added up, rounded to 2 places (0.0 without one)
Every category of silver_events has its row, one with no purchase too. A line silver put in
the quarantine is no event: it counts nowhere.

gold_category_sales_sql() returns the CREATE MATERIALIZED VIEW statement. The check first runs
its SELECT in its own session, on a silver_events made from its first files as silver.py makes
it, then once more after one more file (a second or two). Then it writes the statement into a
copy of the lesson's pipeline as transformations/gold_category_sales.sql, in place of gold.sql,
and runs that pipeline with spark-pipelines as lesson 18 does, on other files: once, then again
after one more file. After each run it reads gold_category_sales and compares its rows (its
tables show run 1 as batch 0, run 2 as batch 1). Name the table the view reads as gold.sql
does: silver_events.

Input: the pipeline's silver_events, the good shop events with common.schemas.
ECOMMERCE_EVENT_SCHEMA's columns (event_id, user_id, event_type, product_id, product_name,
category, price, quantity, timestamp) and source_file.

The check takes about 30 seconds (measured on 2 cores: the pipeline runs in a Spark of its own,
through three spark-pipelines commands).

Check it:  python course.py exercises check 18.1
Stuck?     python course.py exercises hint 18.1
"""


def gold_category_sales_sql() -> str:
    """The pipeline's definition of gold_category_sales: one CREATE MATERIALIZED VIEW."""
    raise NotImplementedError("TODO: return the CREATE MATERIALIZED VIEW statement")
