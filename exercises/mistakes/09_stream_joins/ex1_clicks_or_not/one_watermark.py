"""A known mistake: only the clicks have a watermark; no impression is ever evicted."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CLICK_WINDOW_MINUTES = 10
IMPRESSION_WATERMARK = "2 minutes"
CLICK_WATERMARK = "2 minutes"


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    clicks = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    )
    clicks = clicks.withWatermark("click_time", CLICK_WATERMARK)
    same_impression = F.col("impression_id") == F.col("click_impression_id")
    window_end = F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES")
    in_time = (F.col("click_time") >= F.col("impression_time")) & (
        F.col("click_time") <= window_end
    )
    return impressions.join(clicks, same_impression & in_time, "left_outer").select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )
