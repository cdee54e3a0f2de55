"""Another right answer: the condition written as one SQL expression (=, >= and <= with an
INTERVAL: the same two-ended bound Spark extracts its state watermarks from), "left" as the join
type (Spark's alias of left_outer), and the watermarks' delays written as "120 seconds" (2 min)."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Every impression, with the click that came within CLICK_WINDOW_MINUTES after it, or
    nulls."""
    impressions = impressions.withWatermark("impression_time", "120 seconds")
    clicks = clicks.selectExpr(
        "click_id", "impression_id AS click_impression_id", "click_time"
    ).withWatermark("click_time", "120 seconds")
    condition = F.expr(
        "impression_id = click_impression_id"
        " AND click_time >= impression_time"
        f" AND click_time <= impression_time + INTERVAL {CLICK_WINDOW_MINUTES} MINUTES"
    )
    joined = impressions.join(clicks, condition, "left")
    return joined.select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )
