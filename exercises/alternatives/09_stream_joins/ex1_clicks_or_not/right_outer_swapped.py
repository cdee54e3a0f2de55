"""Another right answer: the clicks on the left and a right outer join: the impressions are the
kept (right) side and the clicks the nullable one. Both sides have their watermark, the
condition the same two-ended time bound, so Spark accepts it, emits matched pairs at once and
evicts an unmatched impression (with nulls) when the join's watermark passes its bound, as the
left outer join does. The select puts the columns back in order."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Every impression, with the click that came within CLICK_WINDOW_MINUTES after it, or
    nulls."""
    shown = impressions.withWatermark("impression_time", IMPRESSION_WATERMARK)
    clicked = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    ).withWatermark("click_time", CLICK_WATERMARK)
    window_end = F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES")
    condition = (
        (F.col("click_impression_id") == F.col("impression_id"))
        & (F.col("click_time") >= F.col("impression_time"))
        & (F.col("click_time") <= window_end)
    )
    # Every impression is kept: it is the right side of a right outer join.
    joined = clicked.join(shown, condition, "right_outer")
    return joined.select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )
