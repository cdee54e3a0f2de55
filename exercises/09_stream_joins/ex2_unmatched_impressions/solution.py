"""Exercise 09.2 · Missing unmatched rows — a reference solution."""

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
    # The fix: a watermark on the impressions too. The clicks' watermark and the time bound
    # are enough for Spark to accept a left outer join, but an impression leaves the join's
    # state (and, without a click, comes out with nulls) only if the impressions have a
    # watermark of their own, once the join's watermark (the smaller of the two) has passed
    # its time bound. Without one, none ever leaves: no nulls, and state that grows forever.
    impressions = impressions.withWatermark("impression_time", IMPRESSION_WATERMARK)
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
