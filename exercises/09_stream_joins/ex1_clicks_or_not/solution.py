"""Exercise 09.1 · Clicks or not — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Every impression, with the click that came within CLICK_WINDOW_MINUTES after it, or
    nulls."""
    # Both sides have an impression_id: rename the click's, so the condition can tell them apart.
    clicks = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    )
    # Watermarks on BOTH sides: without the clicks' one Spark refuses the left outer join;
    # without the impressions' one it accepts it but never evicts (nor emits with nulls) an
    # impression. With both, an impression goes once the join's watermark (the smaller of the
    # two) has passed its time bound.
    impressions = impressions.withWatermark("impression_time", IMPRESSION_WATERMARK)
    clicks = clicks.withWatermark("click_time", CLICK_WATERMARK)
    same_impression = F.col("impression_id") == F.col("click_impression_id")
    # The time bound, inside the join condition: with it and the watermarks, Spark can work out
    # when an impression is past any click; without it, it refuses the left outer join.
    window_end = F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES")
    in_time = (F.col("click_time") >= F.col("impression_time")) & (
        F.col("click_time") <= window_end
    )
    # left_outer: an impression without a click comes out too, with nulls, once the join's
    # watermark has passed its time bound.
    return impressions.join(clicks, same_impression & in_time, "left_outer").select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )
