"""Exercise 09.1 · Clicks or not (build) — practises lesson 09, a left outer stream-stream join.

Join ad impressions with their clicks so that EVERY impression comes out once: with its click
if one came, with null click columns if none did. A click counts only for its own impression
(same impression_id), at the impression's time or up to CLICK_WINDOW_MINUTES after it; a
click outside that time bound matches nothing. An impression with a click comes out as soon as
the click has arrived; one without a click comes out only when Spark knows no click can still
come: when the join's watermark has passed the end of its time bound. Either side's rows may
arrive up to 2 minutes late (IMPRESSION_WATERMARK, CLICK_WATERMARK).

Expected columns, in this order:
  impression_id     the impression
  ad_id             the ad shown
  user_id           to whom
  impression_time   when it was shown
  click_id          the click on it within the time bound, or null
  click_time        when that click happened, or null

Input: two streams, impressions with common.schemas.IMPRESSION_SCHEMA (impression_id, ad_id,
user_id, impression_time) and clicks with common.schemas.CLICK_SCHEMA (click_id,
impression_id, ad_id, user_id, click_time).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 09.1
Stuck?     python course.py exercises hint 09.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Every impression, with the click that came within CLICK_WINDOW_MINUTES after it, or
    nulls."""
    raise NotImplementedError("TODO: write the join")
