"""Another right answer: both watermarks set first, the condition written as one SQL expression
with BETWEEN (inclusive at both ends, as the task's bound is), the join type spelled "left"."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Every impression, with the click that came within CLICK_WINDOW_MINUTES after it, or
    nulls."""
    shown = impressions.withWatermark("impression_time", IMPRESSION_WATERMARK)
    clicked = clicks.withWatermark("click_time", CLICK_WATERMARK).selectExpr(
        "click_id", "impression_id AS click_impression_id", "click_time"
    )
    condition = F.expr(
        "impression_id = click_impression_id AND click_time BETWEEN impression_time AND "
        f"impression_time + INTERVAL {CLICK_WINDOW_MINUTES} MINUTES"
    )
    return shown.join(clicked, condition, "left").select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )
