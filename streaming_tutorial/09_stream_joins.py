"""09 · Stream joins: enrich a stream with a table, and join two streams with watermarks.

What you'll learn
  - Stream-static join: each micro-batch of shop events is joined with the product
    catalogue (a batch DataFrame). Spark runs the static side again in every micro-batch.
  - Stream-stream join: ad clicks meet their impressions. Both sides need a watermark and
    the condition a time bound ("a click counts within 10 minutes of its impression"), or
    the join's state grows forever.
  - Inner vs left outer: a left outer join emits an impression without a click only when
    the watermark guarantees no click can still come - you will see which batch does it.
  - Which joins streams support, and where the click-through rate (CTR) is computed
    (a streaming aggregation after an outer join has its own rules).

Run
  python streaming_tutorial/09_stream_joins.py                  # ad events from Kafka
  python streaming_tutorial/09_stream_joins.py --source files   # ad events from JSON files
  python streaming_tutorial/09_stream_joins.py --available-now  # only what is there now, then stop
  It starts what it needs when it is not running: the shop simulator, the ad producer and a
  Kafka broker (or uses KAFKA_BOOTSTRAP_SERVERS). To run them yourself, in other terminals:
    python local_kafka.py start
    python data_generators/generate_ecommerce_events.py --count 20 --interval 2
    python data_generators/kafka_producer.py --kind ads --count 400 --rate 50
    python streaming_tutorial/09_stream_joins.py --no-simulator --duration 60
  With --source files, the ad events come from:
    python data_generators/generate_ad_events.py --count 400 --interval 0.5

What you'll see
  (part 2 exactly; parts 1 and 3 with other times and counts)
  ========================================================================
  1. Stream-static join: shop events + the product catalogue
  ========================================================================
  Batch: 0
  +----------+----------+----------+----------------+-----------+----------+--------+-------------+
  |event_id  |event_type|product_id|product_name    |category   |list_price|quantity|known_product|
  +----------+----------+----------+----------------+-----------+----------+--------+-------------+
  |EVT-000001|view      |P007      |Coffee Maker    |Home       |79.99     |1       |true         |
  |EVT-000002|view      |P002      |Wireless Earbuds|Electronics|149.99    |1       |true         |
  ...
  ========================================================================
  2. Stream-stream join, batch by batch: inner vs left outer
  ========================================================================
  A left outer stream-stream join without watermarks fails at start():
    Stream-stream LeftOuter join between two streaming DataFrame/Datasets is not supported
    without a watermark in the join keys, or a watermark on the nullable side and an
    appropriate range condition
  ...
  Batch 0 - watermark 00:00 (none yet) - arrived: IMP-1 10:00, IMP-2 10:01, IMP-3 10:02 | CLK-1 10:03
    inner     : IMP-1+CLK-1
    left outer: IMP-1+CLK-1
  Batch 1 - watermark 10:00 - arrived: IMP-4 10:05 | CLK-3 10:20
    inner     : nothing
    left outer: nothing
  Batch 2 - watermark 10:03 - arrived: IMP-5 10:30
    inner     : nothing
    left outer: nothing
  Batch 3 - watermark 10:18 - arrived: CLK-5 10:31
    inner     : IMP-5+CLK-5
    left outer: IMP-2+null, IMP-3+null, IMP-4+null, IMP-5+CLK-5
  Batch 4 - watermark 10:28 - arrived: nothing
  ...
  ========================================================================
  3. Live: impressions LEFT OUTER JOIN clicks (kafka), then CTR per ad
  ========================================================================
  Started the kafka_producer simulator for this run: python data_generators/kafka_producer.py --kind ads ...
  batch 0 - watermark 1970-01-01T00:00:00.000Z: 34 matched, 0 impressions without a click
  batch 1 - watermark 2026-11-22T13:48:40.000Z: 75 matched, 0 impressions without a click
  batch 2 - watermark 2026-11-22T13:58:31.000Z: 0 matched, 111 impressions without a click
  CTR per ad over the impressions whose outcome is final (impression_time < 2026-11-22 13:48:31):
  +-----+-----------+------+-----------+
  |ad_id|impressions|clicks|ctr_percent|
  +-----+-----------+------+-----------+
  |AD-1 |28         |13    |46.4       |
  |AD-2 |23         |9     |39.1       |
  |AD-3 |38         |10    |26.3       |
  |AD-4 |43         |14    |32.6       |
  |AD-5 |27         |2     |7.4        |
  +-----+-----------+------+-----------+
"""

from __future__ import annotations

import shutil
from contextlib import nullcontext
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from common import cli, config, paths, simulators
from common.microbatch import collect_batches, stream_batches, write_batches
from common.runner import await_queries, banner, checkpoint_root, foreach_batch, lesson_session, run_lesson, say
from common.schemas import CLICK_SCHEMA, ECOMMERCE_EVENT_SCHEMA, IMPRESSION_SCHEMA, PRODUCT_SCHEMA

LESSON = "09_stream_joins"
DEFAULT_DURATION = 24  # a third for the stream-static part, the rest for the live ad join
CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive
TRIGGER_INTERVAL = "2 seconds"
SHOW_ROWS = 5
SHOP_SIMULATOR_ARGS = ["--count", "10", "--interval", "2"]
AD_COUNT = 400  # impressions per simulator run: 20 minutes of event time
AD_FILE_SIMULATOR_ARGS = ["--count", str(AD_COUNT), "--interval", "0.5"]
AD_PRODUCER_RATE = 50  # messages per second: ~530 messages in ~11 s

# The walkthrough of part 2 (2025-01-15, times HH:MM). One list per micro-batch.
SCENARIO_IMPRESSIONS = [
    [("IMP-1", "AD-1", "10:00"), ("IMP-2", "AD-2", "10:01"), ("IMP-3", "AD-1", "10:02")],
    [("IMP-4", "AD-2", "10:05")],
    [("IMP-5", "AD-1", "10:30")],
    [],
]
SCENARIO_CLICKS = [
    [("CLK-1", "IMP-1", "10:03")],
    [("CLK-3", "IMP-3", "10:20")],  # 18 minutes after IMP-3: outside the 10-minute bound
    [],
    [("CLK-5", "IMP-5", "10:31")],
]


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    parser.add_argument("--source", choices=("kafka", "files"), default="kafka",
                        help="where the ad impressions and clicks come from (default: %(default)s)")
    args = parser.parse_args(argv)
    paths.ensure_dirs(paths.ECOMMERCE_DIR)
    checkpoints = checkpoint_root(LESSON, args)
    with kafka_if(args.source == "kafka") as bootstrap, lesson_session(
        LESSON, args, kafka=args.source == "kafka"
    ) as spark:
        banner("1. Stream-static join: shop events + the product catalogue")
        with simulators.simulator_for_lesson(
            "ecommerce", "generate_ecommerce_events.py", SHOP_SIMULATOR_ARGS, enabled=not args.no_simulator
        ):
            run_enrichment(spark, checkpoints / "enriched_events", args.duration / 3, available_now=args.available_now)
        say("""The catalogue is a batch DataFrame: the join re-runs its plan in every
            micro-batch, so Spark reads products.csv again each time and sees edits to it
            (but not a NEW file in its folder: the file list is fixed when the DataFrame is
            created). .cache() it to read it once; a Delta table gives each batch its
            latest snapshot. A small static side is broadcast to every task. Left outer
            keeps events whose product is not in the catalogue (known_product = false).""")

        banner("2. Stream-stream join, batch by batch: inner vs left outer")
        scenario = prepare_scenario(checkpoints)
        explain_outer_join_without_watermark(spark, scenario, checkpoints)
        walk_through_scenario(spark, scenario, checkpoints)

        banner(f"3. Live: impressions LEFT OUTER JOIN clicks ({args.source}), then CTR per ad")
        if args.source == "kafka":
            ensure_ad_topics(bootstrap)
            script, name = "kafka_producer.py", "kafka_producer"
            simulator_args = ["--kind", "ads", "--count", str(AD_COUNT), "--rate", str(AD_PRODUCER_RATE),
                              "--bootstrap-servers", bootstrap]
        else:
            script, name, simulator_args = "generate_ad_events.py", "ad_events", AD_FILE_SIMULATOR_ARGS
        with simulators.simulator_for_lesson(name, script, simulator_args, enabled=not args.no_simulator):
            impressions, clicks = read_ad_lines(spark, args.source, bootstrap)
            run_live_join(spark, impressions, clicks, checkpoints, args.duration * 2 / 3,
                          available_now=args.available_now)


# ------------------------------------------------------------------ stream-static join


def read_products(spark: SparkSession, csv: Path = paths.PRODUCTS_CSV) -> DataFrame:
    """The product catalogue, read in batch (a static DataFrame)."""
    return spark.read.schema(PRODUCT_SCHEMA).option("header", True).csv(str(csv))


def build_enriched_events(events: DataFrame, products: DataFrame) -> DataFrame:
    """Each shop event with the catalogue's name, category and list price of its product."""
    # Left outer with the STREAM on the left: supported, and an event with an unknown
    # product is kept (with nulls) instead of vanishing. The reverse (static LEFT JOIN
    # stream) is not supported: Spark cannot know a static row will never match later.
    catalogue = products.select("product_id", "product_name", "category", "list_price")
    return (
        events.select("event_id", "user_id", "event_type", "product_id", "quantity", "price", "timestamp")
        .join(catalogue, "product_id", "left")
        .withColumn("known_product", F.col("list_price").isNotNull())
        .select("event_id", "event_type", "product_id", "product_name", "category", "list_price", "quantity",
                "price", "timestamp", "known_product")
    )


def run_enrichment(spark: SparkSession, checkpoint: Path, duration: float, *, available_now: bool = False) -> None:
    events = spark.readStream.schema(ECOMMERCE_EVENT_SCHEMA).option("maxFilesPerTrigger", 1).json(
        str(paths.ECOMMERCE_DIR))
    query = (
        build_enriched_events(events, read_products(spark))
        .drop("price", "timestamp")  # narrower tables read better in the console
        .writeStream.format("console")
        .option("truncate", False)
        .option("numRows", SHOW_ROWS)
        .option("checkpointLocation", str(checkpoint))
        .trigger(**trigger(available_now))
        .queryName("enriched_events")
        .start()
    )
    await_queries([query], duration)


# ------------------------------------------------------------------ stream-stream join


def build_ad_join(impressions: DataFrame, clicks: DataFrame, how: str = "left_outer") -> DataFrame:
    """Impressions joined with the clicks that came within CLICK_WINDOW_MINUTES after them."""
    # Watermarks on BOTH sides tell Spark how late each side's rows can be. With the time
    # bound below, Spark can then work out when an impression can no longer get a click:
    # it drops it from the join's state (and, in a left outer join, emits it with nulls).
    # Without them the state would keep every impression and click forever.
    impressions = impressions.withWatermark("impression_time", IMPRESSION_WATERMARK)
    clicks = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    ).withWatermark("click_time", CLICK_WATERMARK)
    condition = (
        (F.col("impression_id") == F.col("click_impression_id"))
        & (F.col("click_time") >= F.col("impression_time"))
        & (F.col("click_time") <= F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES"))
    )
    return impressions.join(clicks, condition, how).select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )


def build_ctr_per_ad(joined: DataFrame, settled_before: datetime | None = None) -> DataFrame:
    """Impressions, clicks and CTR per ad from the left outer join's output (a batch DataFrame).

    ``settled_before``: count only impressions older than this. A matched impression is
    emitted at once, an unmatched one only after the watermark passes: near the
    watermark the output holds the clicked impressions but not yet the others, and the
    CTR there would be too high.
    """
    if settled_before is not None:
        joined = joined.filter(F.col("impression_time") < F.lit(settled_before))
    return (
        joined.groupBy("ad_id")
        .agg(F.countDistinct("impression_id").alias("impressions"), F.count("click_id").alias("clicks"))
        .withColumn("ctr_percent", F.round(F.col("clicks") * 100.0 / F.col("impressions"), 1))
        .orderBy("ad_id")
    )


def explain_outer_join_without_watermark(spark: SparkSession, folder: Path, checkpoints: Path) -> str:
    """Start a left outer stream-stream join with no watermark: Spark refuses at start()."""
    impressions = stream_batches(spark, folder / "impressions", IMPRESSION_SCHEMA)
    clicks = stream_batches(spark, folder / "clicks", CLICK_SCHEMA).select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time")
    joined = impressions.join(clicks, F.col("impression_id") == F.col("click_impression_id"), "left_outer")
    try:
        joined.writeStream.foreachBatch(lambda batch, batch_id: None).option(
            "checkpointLocation", str(checkpoints / "no_watermark")).start().stop()
    except AnalysisException as error:
        message = str(error).split(";")[0]
        print(f"A left outer stream-stream join without watermarks fails at start():\n  {message}")
        say("""An inner join without watermarks would run, but keep every row of both
            streams in its state forever. Supported between two streams: inner, left/right
            outer, full outer and left semi (outer and semi joins need the watermarks and
            the time bound). Not supported: left anti, and any join in update or complete
            mode - a stream-stream join only appends.""")
        return message
    raise AssertionError("an outer stream-stream join without watermark unexpectedly started")


def scenario_records() -> tuple[list[list[dict]], list[list[dict]]]:
    """The walkthrough's impressions and clicks, one list per micro-batch."""
    def moment(hhmm: str) -> str:
        return f"2025-01-15T{hhmm}:00.000Z"

    impressions = [[{"impression_id": i, "ad_id": ad, "user_id": "USER-001", "impression_time": moment(t)}
                    for i, ad, t in batch] for batch in SCENARIO_IMPRESSIONS]
    clicks = [[{"click_id": c, "impression_id": i, "ad_id": "", "user_id": "USER-001", "click_time": moment(t)}
               for c, i, t in batch] for batch in SCENARIO_CLICKS]
    return impressions, clicks


def prepare_scenario(checkpoints: Path) -> Path:
    """Write the walkthrough's input afresh: one impressions file and one clicks file per batch."""
    folder = paths.output_for(LESSON, "scenario")
    # The scenario replays from the start on every run: stale input or checkpoints would
    # make the file source skip everything as "already processed".
    for stale in (folder, checkpoints / "scenario_inner", checkpoints / "scenario_left_outer"):
        shutil.rmtree(stale, ignore_errors=True)
    impressions, clicks = scenario_records()
    write_batches(folder / "impressions", impressions)
    write_batches(folder / "clicks", clicks)
    return folder


def walk_through_scenario(spark: SparkSession, folder: Path, checkpoints: Path) -> dict:
    """Run the scenario through an inner and a left outer join; print what each batch emitted."""
    runs = {}
    for how in ("inner", "left_outer"):
        joined = build_ad_join(stream_batches(spark, folder / "impressions", IMPRESSION_SCHEMA),
                               stream_batches(spark, folder / "clicks", CLICK_SCHEMA), how)
        runs[how] = collect_batches(joined, checkpoints / f"scenario_{how}", sort_key=lambda row: row.impression_id)
    print(f"Click window: {CLICK_WINDOW_MINUTES} minutes; watermarks: impressions {IMPRESSION_WATERMARK}, "
          f"clicks {CLICK_WATERMARK}")
    inner = {batch.batch_id: batch for batch in runs["inner"].batches}
    for batch in runs["left_outer"].batches:
        arrived_impressions = SCENARIO_IMPRESSIONS[batch.batch_id] if batch.batch_id < len(SCENARIO_IMPRESSIONS) else []
        arrived_clicks = SCENARIO_CLICKS[batch.batch_id] if batch.batch_id < len(SCENARIO_CLICKS) else []
        arrived = ", ".join(f"{i} {t}" for i, _, t in arrived_impressions)
        arrived += (" | " if arrived and arrived_clicks else "") + ", ".join(f"{c} {t}" for c, _, t in arrived_clicks)
        print(f"Batch {batch.batch_id} - watermark {short_time(batch.watermark)} - arrived: {arrived or 'nothing'}")
        print(f"  inner     : {pairs(inner[batch.batch_id].rows) if batch.batch_id in inner else '-'}")
        print(f"  left outer: {pairs(batch.rows)}")
    say(f"""IMP-1 met CLK-1 at once, in both joins. CLK-3 came 18 minutes after IMP-3:
        outside the {CLICK_WINDOW_MINUTES}-minute bound, so it matches nothing. The watermark is
        the MINIMUM of the two streams' watermarks (the clicks' here): after batch 2 it
        reached 10:18, so in batch 3 Spark knew no click could still come for impressions
        older than 10:08 and emitted IMP-2, IMP-3 and IMP-4 with nulls. The inner join
        simply dropped them from its state.""")
    return runs


def short_time(watermark: str | None) -> str:
    if not watermark or watermark.startswith("1970"):
        return "00:00 (none yet)"
    return watermark[11:16]


def pairs(rows: list) -> str:
    return ", ".join(f"{row.impression_id}+{row.click_id or 'null'}" for row in rows) or "nothing"


# ------------------------------------------------------------------ the live ad join


def read_ad_lines(spark: SparkSession, source: str, bootstrap: str | None,
                  topics: tuple[str, str] = (config.TOPIC_IMPRESSIONS, config.TOPIC_CLICKS),
                  folder: Path = paths.AD_EVENTS_DIR) -> tuple[DataFrame, DataFrame]:
    """(impressions, clicks) as streams of JSON text in a ``value`` column: Kafka messages or file lines."""
    if source == "kafka":
        def topic_stream(topic: str) -> DataFrame:
            return (
                spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic)
                # A new checkpoint starts at the beginning of the topic: the producer may
                # have sent its first messages while Spark was still starting.
                .option("startingOffsets", "earliest")
                .load()
                .select(F.col("value").cast("string").alias("value"))
            )

        return topic_stream(topics[0]), topic_stream(topics[1])
    for kind in ("impressions", "clicks"):
        (folder / kind).mkdir(parents=True, exist_ok=True)
    return (spark.readStream.text(str(folder / "impressions")), spark.readStream.text(str(folder / "clicks")))


def parse_records(lines: DataFrame, schema, id_column: str, time_column: str) -> DataFrame:
    """JSON text -> the schema's columns; only records with an id and a time (see build_malformed)."""
    parsed = lines.select(F.from_json("value", schema).alias("record")).select("record.*")
    return parsed.filter(F.col(id_column).isNotNull() & F.col(time_column).isNotNull())


def build_malformed(lines: DataFrame, schema, id_column: str, time_column: str, kind: str) -> DataFrame:
    """The records parse_records leaves out, as raw text: they go to a quarantine, not nowhere."""
    record = F.from_json("value", schema)
    return lines.filter(record.isNull() | record[id_column].isNull() | record[time_column].isNull()).select(
        F.lit(kind).alias("kind"), "value")


class JoinSink:
    """foreachBatch sink of the live join: one parquet folder per batch id, plus counts per batch."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.counts: dict[int, tuple[int, int]] = {}  # batch id -> (matched, unmatched)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        try:
            row = batch.agg(F.count("click_id").alias("matched"),
                            F.count(F.when(F.col("click_id").isNull(), 1)).alias("unmatched")).collect()[0]
            if row["matched"] or row["unmatched"]:
                # Overwriting the batch's own folder makes a replayed batch harmless.
                batch.write.mode("overwrite").parquet(str(self.folder / f"batch_id={batch_id}"))
        finally:
            batch.unpersist()
        self.counts[batch_id] = (row["matched"], row["unmatched"])


def run_live_join(spark: SparkSession, impression_lines: DataFrame, click_lines: DataFrame, checkpoints: Path,
                  duration: float, *, available_now: bool = False) -> None:
    impressions = parse_records(impression_lines, IMPRESSION_SCHEMA, "impression_id", "impression_time")
    clicks = parse_records(click_lines, CLICK_SCHEMA, "click_id", "click_time")
    sink = JoinSink(paths.output_for(LESSON, "ad_joins"))
    join_query = (
        build_ad_join(impressions, clicks, "left_outer")
        .writeStream.foreachBatch(foreach_batch(sink))
        .option("checkpointLocation", str(checkpoints / "ad_join"))
        .trigger(**trigger(available_now))
        .queryName("ad_join")
        .start()
    )
    quarantine_query = (
        build_malformed(impression_lines, IMPRESSION_SCHEMA, "impression_id", "impression_time", "impression")
        .unionByName(build_malformed(click_lines, CLICK_SCHEMA, "click_id", "click_time", "click"))
        .writeStream.format("json")
        .option("path", str(paths.output_for(LESSON, "quarantine")))
        .option("checkpointLocation", str(checkpoints / "quarantine"))
        .trigger(**trigger(available_now))
        .queryName("ad_quarantine")
        .start()
    )
    with kafka_errors_explained():
        await_queries([join_query, quarantine_query], duration)
    report_live_join(spark, join_query, sink)


def report_live_join(spark: SparkSession, query, sink: JoinSink) -> None:
    marks = {p["batchId"]: p.get("eventTime", {}).get("watermark") for p in query.recentProgress}
    for batch_id in sorted(sink.counts):
        matched, unmatched = sink.counts[batch_id]
        if matched or unmatched:
            print(f"batch {batch_id} - watermark {marks.get(batch_id, '?')}: {matched} matched, "
                  f"{unmatched} impressions without a click")
    written = [path for path in sink.folder.glob("batch_id=*") if any(path.glob("*.parquet"))]
    if not written:
        say("No joined rows yet: the ad events had not arrived. Run the lesson again (it continues "
            "from its checkpoint) or give it a longer --duration.")
        return
    last_watermark = (query.lastProgress or {}).get("eventTime", {}).get("watermark")
    settled = None
    if last_watermark and not last_watermark.startswith("1970"):
        settled = datetime.fromisoformat(last_watermark.replace("Z", "")) - timedelta(minutes=CLICK_WINDOW_MINUTES)
    joined = spark.read.parquet(str(sink.folder))
    print(f"CTR per ad over the impressions whose outcome is final (impression_time < "
          f"{settled.isoformat(sep=' ') if settled else 'the end'}):")
    build_ctr_per_ad(joined, settled).show(truncate=False)
    say(f"""The join's output is appended batch by batch (one parquet folder per batch id),
        and the CTR is a batch aggregation over it. Why not groupBy(ad_id) on the stream?
        After a stream-stream join only append mode is allowed, and append mode needs an
        aggregation that closes: a window on the event time, e.g.
        groupBy(window("impression_time", "10 minutes"), "ad_id"), which Spark 4 chains
        after the join but emits only when the watermark closes each window. Impressions
        newer than {CLICK_WINDOW_MINUTES} minutes before the watermark still wait in the
        join's state, so they are left out of the CTR.""")


def trigger(available_now: bool) -> dict:
    """availableNow: process what is there and stop; otherwise a micro-batch every TRIGGER_INTERVAL."""
    return {"availableNow": True} if available_now else {"processingTime": TRIGGER_INTERVAL}


# ------------------------------------------------------------------ Kafka plumbing


def kafka_if(wanted: bool):
    """The Kafka broker's bootstrap servers when the ads come from Kafka, else None."""
    if not wanted:
        return nullcontext(None)
    from common.kafka_broker import kafka_for_lesson

    return kafka_for_lesson()


def ensure_ad_topics(bootstrap: str) -> None:
    from common.kafka import ensure_topics

    ensure_topics(bootstrap, [config.TOPIC_IMPRESSIONS, config.TOPIC_CLICKS])


def kafka_errors_explained():
    from common.kafka import explain_failures

    return explain_failures()


if __name__ == "__main__":
    run_lesson(main)
