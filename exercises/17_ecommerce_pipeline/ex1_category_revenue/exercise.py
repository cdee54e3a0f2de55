"""Exercise 17.1 · Revenue per category (build) — practises lesson 17, windows with a watermark.

The capstone's revenue query: per product category and 5-minute window of event time, the
purchases, the revenue and the average price. It runs in update mode: each micro-batch sends the
rows of the windows that changed in it. Views and carts add up to nothing.

After each batch the watermark moves to the latest event time seen minus 10 minutes. As in
lesson 07, a purchase is too late, and dropped, when its window ended at or before the previous
batch's watermark; a window leaves the state once the watermark reaches its end.

Expected columns, in this order:
  window_start, window_end  the 5-minute window (timestamps)
  category                  the product category
  purchases                 purchases in the window (count)
  revenue                   the sum of price x quantity, rounded to 2 places
  avg_price                 the average price of those purchases, rounded to 2 places

Input: a stream of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id, user_id,
event_type, product_id, product_name, category, price, quantity, timestamp); the event time is
``timestamp``.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 17.1
Stuck?     python course.py exercises hint 17.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

REVENUE_WINDOW = "5 minutes"
# An event up to this far behind the latest counts; a later one only while its window is open.
WATERMARK_DELAY = "10 minutes"
EVENT_TIME = "timestamp"  # the event-time column of ECOMMERCE_EVENT_SCHEMA


def build_category_revenue(events: DataFrame) -> DataFrame:
    """Purchases, revenue and average price per category per 5-minute window of event time."""
    raise NotImplementedError("TODO: write the query")
