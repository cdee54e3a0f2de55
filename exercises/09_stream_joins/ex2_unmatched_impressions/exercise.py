"""Exercise 09.2 · Missing unmatched rows (fix) — practises lesson 09, outer join watermarks.

build_ad_join below should send every impression once: with its click if one came within
CLICK_WINDOW_MINUTES after it, with null click columns if none did. Spark accepts the query and
runs it, and the impressions that got a click come out as soon as their click arrives. But
the left outer join never emits its unmatched rows: an impression without a click never comes
out, not even once the stream is far past its time bound (in the check, no row with a null
click ever appears), and the join's state only grows. Find why, and fix the query.

Expected columns, in this order (the query already selects them):
  impression_id, ad_id, user_id, impression_time   the impression
  click_id, click_time                             its click within the time bound, or null

Input: two streams, impressions with common.schemas.IMPRESSION_SCHEMA and clicks with
common.schemas.CLICK_SCHEMA.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 09.2
Stuck?     python course.py exercises hint 09.2
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Every impression, with the click that came within CLICK_WINDOW_MINUTES after it, or
    nulls."""
    clicks = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    )
    # Clicks may arrive up to 2 minutes late.
    clicks = clicks.withWatermark("click_time", CLICK_WATERMARK)
    same_impression = F.col("impression_id") == F.col("click_impression_id")
    # A click counts from the impression's time to CLICK_WINDOW_MINUTES after it.
    window_end = F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES")
    in_time = (F.col("click_time") >= F.col("impression_time")) & (
        F.col("click_time") <= window_end
    )
    return impressions.join(clicks, same_impression & in_time, "left_outer").select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )
