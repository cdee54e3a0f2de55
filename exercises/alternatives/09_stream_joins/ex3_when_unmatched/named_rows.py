"""Another right answer: the correct prediction written with named rows and list(): batch 0 P1+L1,
batch 1 nothing (watermark 08:59), batch 2 P3+L3 (P0 dropped as older than 08:59; the join's
watermark is still 08:59), the trailing batch P2 with nulls (watermark min(09:28, 09:33), 09:28
>= 09:02 + 10 min)."""

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


# One list per micro-batch, each holding one (impression_id, click_id) tuple per row that batch
# sends, in any order; click_id None for a row without a click; [] for a batch that sends nothing:
#   [[("P9", "L9"), ("P8", None)], [], ...]
P1_CLICKED = ("P1", "L1")
P3_CLICKED = ("P3", "L3")
P2_NO_CLICK = ("P2", None)
PREDICTION = [[P1_CLICKED], list(), [P3_CLICKED], [P2_NO_CLICK]]
