"""Exercise 09.3 · When the nulls come — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive

# One list per micro-batch, in arrival order: (impression_id, impression_time).
IMPRESSIONS = [
    [("P1", "09:00:00"), ("P2", "09:02:00")],
    [("P3", "09:30:00")],
    [("P0", "08:50:00")],
]
# One list per micro-batch, in arrival order: (click_id, impression_id, click_time).
CLICKS = [
    [("L1", "P1", "09:01:00")],
    [],
    [("L3", "P3", "09:35:00")],
]


def build_ad_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """Impressions joined with the clicks that came within CLICK_WINDOW_MINUTES after them."""
    clicks = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    )
    # Watermarks on BOTH sides tell Spark how late each side's rows can be.
    impressions = impressions.withWatermark("impression_time", IMPRESSION_WATERMARK)
    clicks = clicks.withWatermark("click_time", CLICK_WATERMARK)
    same_impression = F.col("impression_id") == F.col("click_impression_id")
    # The time bound: with it and the watermarks, Spark can work out when an impression can no
    # longer get a click. It drops it from the join's state then and emits it with nulls.
    window_end = F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES")
    in_time = (F.col("click_time") >= F.col("impression_time")) & (
        F.col("click_time") <= window_end
    )
    return impressions.join(clicks, same_impression & in_time, "left_outer").select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )


# The join runs each micro-batch with the MINIMUM of the two streams' watermarks, computed at
# the end of the batch before; an impression without a click comes out once that watermark has
# passed impression_time + 10 minutes, and a row older than the watermark is dropped.
PREDICTION = [
    # No watermark yet. L1 meets P1 at once; P2 waits: its click may still come.
    [("P1", "L1")],
    # Watermark min(09:00, 08:59) = 08:59: P2 (09:02 + 10 minutes) is not settled yet.
    [],
    # Watermark min(09:28, 08:59) = 08:59: the clicks sent nothing in batch 1, so theirs did
    # not move. L3 meets P3. P0 (08:50) is older than 08:59: dropped, it never comes out.
    [("P3", "L3")],
    # No new rows, but the watermark moved: min(09:28, 09:33) = 09:28, past 09:12, P2's bound.
    [("P2", None)],
]
