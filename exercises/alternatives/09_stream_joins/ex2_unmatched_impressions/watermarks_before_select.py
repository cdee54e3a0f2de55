"""Another right answer: both watermarks set on the raw streams first (the clicks' one before the
select that renames impression_id: a plain column keeps its watermark through a select), the
impressions' delay written "120 seconds" (2 min). Same plan as adding the impressions' watermark
next to the clicks'."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Every impression, with the click that came within CLICK_WINDOW_MINUTES after it, or
    nulls."""
    # Both streams may arrive up to 2 minutes late: a watermark on each, set first.
    impressions = impressions.withWatermark("impression_time", "120 seconds")
    clicks = clicks.withWatermark("click_time", CLICK_WATERMARK).select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    )
    same_impression = F.col("impression_id") == F.col("click_impression_id")
    # A click counts from the impression's time to CLICK_WINDOW_MINUTES after it.
    window_end = F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES")
    in_time = (F.col("click_time") >= F.col("impression_time")) & (
        F.col("click_time") <= window_end
    )
    return impressions.join(clicks, same_impression & in_time, "left_outer").select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )
