"""Exercise 09.3 · When the nulls come (predict) — practises lesson 09, outer join timing.

The query below is lesson 09's left outer join of ad impressions with their clicks: watermarks
of 2 minutes on both streams, and a click counts only within CLICK_WINDOW_MINUTES after its
impression. Its input arrives in three micro-batches (IMPRESSIONS and CLICKS below, in the
order they arrive). Spark may run one more micro-batch after the input, with no new rows,
when the watermark has moved: count it as a micro-batch too.

Predict what each micro-batch sends to the sink: for each row, the impression_id and the
click_id (None for an impression that comes out without a click). Fill in PREDICTION. The
query is not yours to change: the check runs this file's query as it is written here and
compares its output with your prediction.

Remember: each micro-batch runs with the watermark computed at the end of the previous one;
with two watermarked streams, the join uses the smaller of the two.

Input: impressions (common.schemas.IMPRESSION_SCHEMA) and clicks (common.schemas.CLICK_SCHEMA),
all on one day.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 09.3
Stuck?     python course.py exercises hint 09.3
"""

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
PREDICTION = ...  # TODO: what each micro-batch sends
