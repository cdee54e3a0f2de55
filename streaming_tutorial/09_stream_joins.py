"""09 · Stream joins: enrich a stream with a table, and join two streams with watermarks.

What you'll learn
  - Stream-static join: every micro-batch of shop events is joined with the catalogue. A
    CSV DataFrame fixes its files and their lengths when it is created, so an edited CSV is
    read only up to its old length; a Delta table is read at its latest version each time.
  - Stream-stream join: clicks meet their impressions. A watermark on each side and a time
    bound let Spark drop old rows; an inner join runs without them, but its state grows
    forever. A left outer join is refused without a watermark on the right (nullable) side
    and the time bound. But it drops an impression, and emits it with nulls, only if the
    impressions have a watermark too: with the clicks' alone it runs and never emits one.
  - Inner vs left outer: a left outer join emits an impression without a click only once the
    join's watermark (the smaller of the two) has passed its time bound: no click can still
    come. Which impressions a CTR may count, then.

Run
  python streaming_tutorial/09_stream_joins.py                  # ad events from Kafka
  python streaming_tutorial/09_stream_joins.py --source files   # from JSON files, no Kafka
  python streaming_tutorial/09_stream_joins.py --available-now  # the ad events there now, then stop
  It starts a Kafka broker (or uses KAFKA_BOOTSTRAP_SERVERS) and the ad producer if needed; or:
    python local_kafka.py start
    python data_generators/kafka_producer.py --kind ads --count 400 --rate 50
    python streaming_tutorial/09_stream_joins.py --no-simulator --duration 60
  With --source files: python data_generators/generate_ad_events.py --count 400 --interval 0.5

Practise
  python course.py exercises check 09.1   Clicks or not (build)
  python course.py exercises check 09.2   Missing unmatched rows (fix)
  python course.py exercises check 09.3   When the nulls come (predict)
  python course.py exercises check 09.4   Catalogue prices (build)

What you'll see
  Batch 0 reads: EVT-1 P001, EVT-2 P012, EVT-3 P999
    csv    EVT-1 1299.99, EVT-2 59.99, EVT-3 unknown
    delta  EVT-1 1299.99, EVT-2 59.99, EVT-3 unknown
  Before batch 1: products.csv edited (P001 renamed and cheaper, P013 added) and loaded into ...
  Batch 1 reads: EVT-4 P001, EVT-5 P012, EVT-6 P013
    csv    EVT-4 999.99, EVT-5 unknown, EVT-6 unknown
    delta  EVT-4 999.99, EVT-5 59.99, EVT-6 19.99
  ...
  Batch 3 reads: - | CLK-5 IMP-5 10:31
    inner          IMP-5+CLK-5   [watermark 10:18:00]
    left outer     IMP-2+null, IMP-3+null, IMP-4+null, IMP-5+CLK-5   [watermark 10:18:00]
    one watermark  IMP-5+CLK-5   [watermark 10:18:00]
  ...
    batch  state rows left outer  state rows one watermark
    ...
    3      3                      8
    4      2                      -
  ...
  An outer join without watermarks fails:
    Stream-stream LeftOuter join between two streaming DataFrame/Datasets is not supported ...
  CTR per ad over the impressions settled by the join's last watermark (2026-11-23T06:16:30.000Z):
  |ad_id|impressions|clicks|ctr_percent|
  |AD-1 |28         |13    |46.4       |
"""

from __future__ import annotations

import shutil
from contextlib import nullcontext
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import config, parsing, paths, storage
from common.schemas import CLICK_SCHEMA, ECOMMERCE_EVENT_SCHEMA, IMPRESSION_SCHEMA, PRODUCT_SCHEMA
from infra import cli
from infra.kafka import ensure_topics, explain_failures, security_options
from infra.kafka_broker import kafka_for_lesson
from infra.runner import (
    banner,
    checkpoint_root,
    lesson_session,
    pick_trigger,
    run_lesson,
    run_queries,
    say,
)
from infra.simulators import Simulator, simulator_for_lesson
from teaching import lateness
from teaching.demos import Output, records_from_text, replay, replay_streams, show_refusal

LESSON = "09_stream_joins"
DEFAULT_DURATION = 20  # seconds of the live ad join (parts 1 and 2 are replays of a few seconds)
CLICK_WINDOW_MINUTES = 10  # a click counts only within this long after its impression
IMPRESSION_WATERMARK = "2 minutes"  # how late an impression may arrive
CLICK_WATERMARK = "2 minutes"  # how late a click may arrive
LIVE_TRIGGER = "2 seconds"  # one micro-batch of the live join every 2 s
# The scenarios (afresh on every run), the catalogue (CSV and Delta), the live join's rows and
# the quarantine.
OUTPUT = paths.output_for(LESSON)
# Part 1: shop events ("event product") per micro-batch; the catalogue is edited between the two.
SHOP_EVENTS = records_from_text(
    ["EVT-1 P001, EVT-2 P012, EVT-3 P999", "EVT-4 P001, EVT-5 P012, EVT-6 P013"],
    "event_id",
    "product_id",
)
# Part 2: impressions ("id ad time") and clicks ("id impression time") per micro-batch, on
# 2025-01-15 (UTC).
IMPRESSIONS = records_from_text(
    [
        "IMP-1 AD-1 10:00, IMP-2 AD-2 10:01, IMP-3 AD-1 10:02",
        "IMP-4 AD-2 10:05",
        "IMP-5 AD-1 10:30",
    ],
    "impression_id",
    "ad_id",
    "impression_time",
)
CLICKS = records_from_text(
    ["CLK-1 IMP-1 10:03", "CLK-3 IMP-3 10:20", "", "CLK-5 IMP-5 10:31"],  # CLK-3: too late
    "click_id",
    "impression_id",
    "click_time",
)
# The ad simulator of each --source (the producer finds the broker as the lesson does).
AD_SIMULATORS = {
    "kafka": (
        "kafka_producer",
        "kafka_producer.py",
        ["--kind", "ads", "--count", "400", "--rate", "50"],
    ),
    "files": ("ad_events", "generate_ad_events.py", ["--count", "400", "--interval", "0.5"]),
}


def read_catalogue_csv(spark, csv: Path) -> DataFrame:
    """The catalogue, read in batch from a CSV file: a static DataFrame."""
    # Python wrote this copy (write_catalogue), so Spark must read it where Python wrote it.
    storage.require_local_input("The catalogue", csv.parent)
    return (
        # The schema gives the columns' types: no pass over the file to infer them.
        spark.read.schema(PRODUCT_SCHEMA)
        # The first line names the columns: it is not a product.
        .option("header", True)
        .csv(paths.uri(csv))
    )


def read_catalogue_delta(spark, table: Path) -> DataFrame:
    """The catalogue's Delta table, read in batch: a static DataFrame on the table's log."""
    return spark.read.format("delta").load(paths.uri(table))


def write_catalogue(
    spark,
    *,
    edit: bool = False,
    csv: Path = OUTPUT / "catalogue.csv",
    table: Path = OUTPUT / "catalogue",
) -> str:
    """Copy products.csv (or, with ``edit``, edit the copy in place), then load it into the
    Delta table."""
    if not edit:
        csv.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(paths.PRODUCTS_CSV, csv)
    else:  # P001 gets a longer name and a lower price (its line grows by 38 bytes); P013 is added
        csv.write_text(
            csv.read_text().replace(
                "P001,Laptop Pro 15,Electronics,1299.99",
                "P001,Laptop Pro 15 (2025 edition - certified refurbished),Electronics,999.99",
            )
            + "P013,Phone Case,Fashion,19.99\n"
        )
    catalogue = read_catalogue_csv(spark, csv)
    (
        catalogue.write.format("delta")
        # Overwriting a Delta table writes a new version; readers of the table see it at once.
        .mode("overwrite")
        .save(paths.uri(table))
    )
    return (
        "products.csv edited (P001 renamed and cheaper, P013 added) and loaded into the Delta table"
    )


def build_enriched_events(events: DataFrame, products: DataFrame) -> DataFrame:
    """Each shop event with the catalogue's name, category and list price of its product."""
    # Left outer with the STREAM on the left: an event with an unknown product is kept (with
    # nulls). The reverse (static LEFT JOIN stream) is not supported: Spark cannot know
    # that a static row will never match a later event.
    catalogue = products.select("product_id", "product_name", "category", "list_price")
    return (
        events.select(
            "event_id", "user_id", "event_type", "product_id", "quantity", "price", "timestamp"
        )
        .join(catalogue, "product_id", "left")
        .withColumn("known_product", F.col("list_price").isNotNull())
        .select(
            "event_id",
            "event_type",
            "product_id",
            "product_name",
            "category",
            "list_price",
            "quantity",
            "price",
            "timestamp",
            "known_product",
        )
    )


def build_catalogue_joins(
    spark, csv: Path = OUTPUT / "catalogue.csv", table: Path = OUTPUT / "catalogue"
) -> dict[str, Output]:
    """Part 1's two queries: the same join, with the catalogue read from the CSV file or the
    Delta table."""
    # Each static side is created once, here; every micro-batch joins with it again.
    from_csv = read_catalogue_csv(spark, csv)
    from_delta = read_catalogue_delta(spark, table)
    return {
        "csv": Output(
            lambda events: build_enriched_events(events, from_csv),
            sort_key=lambda row: row.event_id,
        ),
        "delta": Output(
            lambda events: build_enriched_events(events, from_delta),
            sort_key=lambda row: row.event_id,
        ),
    }


def build_ad_join(
    impressions: DataFrame,
    clicks: DataFrame,
    how: str = "left_outer",
    impression_watermark: str | None = IMPRESSION_WATERMARK,
) -> DataFrame:
    """Impressions joined with the clicks that came within CLICK_WINDOW_MINUTES after them.

    ``how`` is "inner" (only the impressions that got a click, as soon as it comes) or
    "left_outer" (every impression: one without a click comes out with nulls, once no click
    can still come for it). ``impression_watermark=None`` is the trap part 2 shows: a left
    outer join with a watermark on the clicks only.
    """
    clicks = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    )
    # Watermarks on BOTH sides tell Spark how late each side's rows can be. Spark accepts a left
    # outer join with the clicks' one alone (the side that may be null), but it drops (and emits
    # with nulls) an impression only if the impressions have one too: without it, none ever
    # leaves the join's state.
    if impression_watermark is not None:
        impressions = impressions.withWatermark("impression_time", impression_watermark)
    clicks = clicks.withWatermark("click_time", CLICK_WATERMARK)
    same_impression = F.col("impression_id") == F.col("click_impression_id")
    # The time bound: with it and the watermarks, Spark can work out when an impression can no
    # longer get a click: once the join's watermark (the smaller of the two streams') has passed
    # impression_time + CLICK_WINDOW_MINUTES. It drops it from the join's state then (and, in a
    # left outer join, emits it with nulls); without them the join's state would grow forever.
    window_end = F.col("impression_time") + F.expr(f"INTERVAL {CLICK_WINDOW_MINUTES} MINUTES")
    in_time = (F.col("click_time") >= F.col("impression_time")) & (
        F.col("click_time") <= window_end
    )
    return impressions.join(clicks, same_impression & in_time, how).select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )


def build_unbounded_join(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """The same left outer join without watermarks or a time bound: Spark refuses to run it."""
    clicks = clicks.select(
        "click_id", F.col("impression_id").alias("click_impression_id"), "click_time"
    )
    same_impression = F.col("impression_id") == F.col("click_impression_id")
    return impressions.join(clicks, same_impression, "left_outer").select(
        "impression_id", "ad_id", "user_id", "impression_time", "click_id", "click_time"
    )


def build_join_kinds() -> dict[str, Output]:
    """Part 2's three queries: the inner and the left outer join of the same streams, and the
    left outer join with a watermark on the clicks only ("one watermark")."""
    return {
        "inner": Output(
            lambda impressions, clicks: build_ad_join(impressions, clicks, "inner"),
            sort_key=lambda row: row.impression_id,
        ),
        "left outer": Output(
            lambda impressions, clicks: build_ad_join(impressions, clicks, "left_outer"),
            sort_key=lambda row: row.impression_id,
        ),
        "one watermark": Output(
            lambda impressions, clicks: build_ad_join(
                impressions, clicks, "left_outer", impression_watermark=None
            ),
            sort_key=lambda row: row.impression_id,
        ),
    }


def build_ctr_per_ad(joined: DataFrame, watermark: str | None = None) -> DataFrame:
    """Impressions, clicks and CTR per ad from the left outer join's output (a batch DataFrame).

    Given the join's ``watermark``, only settled impressions count: a matched one is emitted
    at once, an unmatched one only once the watermark is CLICK_WINDOW_MINUTES past it.
    """
    # Spark reports "no watermark yet" as the epoch: then every impression counts.
    if watermark and not watermark.startswith("1970"):
        # An aware datetime (UTC, as Spark reports it): a naive one would be read in the
        # machine's zone.
        moment = datetime.fromisoformat(watermark.replace("Z", "+00:00"))
        joined = joined.where(
            F.col("impression_time") < F.lit(moment - timedelta(minutes=CLICK_WINDOW_MINUTES))
        )
    return (
        joined.groupBy("ad_id")
        .agg(
            F.countDistinct("impression_id").alias("impressions"),
            F.count("click_id").alias("clicks"),
        )
        .withColumn("ctr_percent", F.round(F.col("clicks") * 100.0 / F.col("impressions"), 1))
        .orderBy("ad_id")
    )


def read_ad_topic(spark, bootstrap: str, topic: str) -> DataFrame:
    """One topic of ad events as a stream, each message's value as text (``value``)."""
    # format("kafka") needs the connector: lesson_session(..., kafka=True) puts it on the classpath.
    messages = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        # A secured cluster's login, from the environment (README, 'Your own Kafka cluster');
        # nothing for the course's own broker.
        .options(**security_options(bootstrap))
        .option("subscribe", topic)
        # From the earliest offset: the producer may start before Spark does.
        .option("startingOffsets", "earliest")
        .load()
    )
    # Keys and values are bytes: the value, cast to text, is the JSON record.
    return messages.select(F.col("value").cast("string").alias("value"))


def read_ad_files(spark, folder: Path) -> DataFrame:
    """Each line of the JSON files in ``folder`` as a stream of text (``value``)."""
    # The file source refuses a folder that does not exist, even one the simulator fills later.
    folder.mkdir(parents=True, exist_ok=True)
    return (
        # Text, not json(): a line that is not a record keeps its text, to be quarantined with
        # a reason, instead of becoming a row of nulls.
        spark.readStream.format("text")
        # No schema to give: the text source has one string column, value.
        .load(paths.uri(folder))
    )


def read_ad_events(
    spark,
    source: str,
    bootstrap: str | None = None,
    *,
    topics: tuple[str, str] = (config.TOPIC_IMPRESSIONS, config.TOPIC_CLICKS),
    folder: Path = paths.AD_EVENTS_DIR,
) -> tuple[DataFrame, DataFrame]:
    """(impressions, clicks) from Kafka or JSON files, each record parsed with its
    quarantine_reason."""
    if source == "kafka":
        # Create the topics if the producer has not yet: the queries subscribe to them.
        ensure_topics(bootstrap, topics)
        impression_lines = read_ad_topic(spark, bootstrap, topics[0])
        click_lines = read_ad_topic(spark, bootstrap, topics[1])
    else:
        impression_lines = read_ad_files(spark, folder / "impressions")
        click_lines = read_ad_files(spark, folder / "clicks")
    # parse_json (taught in lesson 03): each record's fields, and why it cannot be used.
    impressions = parsing.parse_json(impression_lines, IMPRESSION_SCHEMA)
    clicks = parsing.parse_json(click_lines, CLICK_SCHEMA)
    return impressions, clicks


def build_quarantine(impressions: DataFrame, clicks: DataFrame) -> DataFrame:
    """The records of both streams that cannot be used: reason, raw text, and which kind."""
    bad_impressions = parsing.quarantined(impressions).withColumn("kind", F.lit("impression"))
    bad_clicks = parsing.quarantined(clicks).withColumn("kind", F.lit("click"))
    return bad_impressions.unionByName(bad_clicks)


def start_unbounded_join(impressions: DataFrame, clicks: DataFrame) -> StreamingQuery:
    """Try to start the join without watermarks (into the noop sink, which discards rows)."""
    good_impressions = parsing.valid_records(impressions, IMPRESSION_SCHEMA)
    good_clicks = parsing.valid_records(clicks, CLICK_SCHEMA)
    return (
        build_unbounded_join(good_impressions, good_clicks)
        # Spark checks the join when the query starts: start() raises.
        .writeStream.format("noop")
        .start()
    )


def start_live_join(
    impressions: DataFrame,
    clicks: DataFrame,
    checkpoints: Path,
    trigger: dict,
    output: Path = OUTPUT,
) -> list[StreamingQuery]:
    """The join of the good records into parquet, and the bad records of both streams into a
    quarantine."""
    good_impressions = parsing.valid_records(impressions, IMPRESSION_SCHEMA)
    good_clicks = parsing.valid_records(clicks, CLICK_SCHEMA)
    joined = (
        build_ad_join(good_impressions, good_clicks, "left_outer")
        # A stream-stream join only appends, and the parquet file sink is exactly-once: a
        # micro-batch replayed after a crash does not write its rows twice.
        .writeStream.format("parquet")
        .outputMode("append")
        .option("path", paths.uri(output / "ad_joins"))
        .option("checkpointLocation", paths.uri(checkpoints / "ad_join"))
        .trigger(**trigger)
        .queryName("ad_join")
        .start()
    )
    # The bad records, kept with their reason in JSON files, never lost. A checkpoint of its
    # own: a restart adds only the bad records it has not written yet.
    quarantine = (
        build_quarantine(impressions, clicks)
        .writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(output / "quarantine"))
        .option("checkpointLocation", paths.uri(checkpoints / "quarantine"))
        .queryName("ad_quarantine")
        .trigger(**trigger)
        .start()
    )
    return [joined, quarantine]


def read_joined(spark, folder: Path = OUTPUT / "ad_joins") -> DataFrame:
    """What the live join wrote: the file sink's log lists the files of the committed
    micro-batches."""
    return spark.read.parquet(paths.uri(folder))


def report_ctr(spark, query: StreamingQuery) -> None:
    """The CTR per ad over what the live join wrote, up to the join's last watermark."""
    if not any((OUTPUT / "ad_joins").glob("*.parquet")):
        say(
            "No joined rows yet: no ad events had arrived. Run the lesson again, or with a "
            "longer --duration."
        )
        return
    progress = query.lastProgress or {}
    event_time = progress.get("eventTime") or {}
    watermark = event_time.get("watermark")
    print(f"CTR per ad over the impressions settled by the join's last watermark ({watermark}):")
    build_ctr_per_ad(read_joined(spark), watermark).show(truncate=False)
    say("""Why a batch aggregation over the join's output, not groupBy(ad_id) on the stream?
        After a stream-stream join only append mode is allowed: an aggregation there needs
        an event-time window, emitted when the watermark closes it.""")


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    parser.add_argument(
        "--source",
        choices=("kafka", "files"),
        default="kafka",
        help="where the ad impressions and clicks come from (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    # A broker only for --source kafka: the files need none.
    broker = kafka_for_lesson() if args.source == "kafka" else nullcontext()
    with (
        broker as bootstrap,
        explain_failures(),
        lesson_session(LESSON, args, kafka=args.source == "kafka", delta=True) as spark,
    ):
        banner(
            "1. Stream-static join: shop events + the catalogue, as a CSV file and as a Delta table"
        )
        write_catalogue(spark)
        replay(
            spark,
            SHOP_EVENTS,
            ECOMMERCE_EVENT_SCHEMA,
            build_catalogue_joins(spark),
            OUTPUT / "scenario",
            edits={1: lambda: write_catalogue(spark, edit=True)},
            describe_rows=lambda rows: ", ".join(
                f"{r.event_id} {r.list_price or 'unknown'}" for r in rows
            ),
        )
        say("""The static side's plan runs again in every micro-batch, but a CSV DataFrame
            fixed its files and their lengths when it was created: batch 1 reads products.csv
            up to the old length (and the line that crosses it). P001's new price is there;
            P012, pushed past that point, and the new P013 are missing, without an error. A
            Delta table keeps a log of its versions, and each micro-batch reads the latest.
            (Re-reading the CSV inside foreachBatch works too.)""")

        # "one watermark" is the left outer join with a watermark on the clicks only.
        banner(
            "2. Stream-stream join, batch by batch: inner, left outer, and left outer with the "
            "clicks' watermark only"
        )
        runs = replay_streams(
            spark,
            {"impressions": (IMPRESSIONS, IMPRESSION_SCHEMA), "clicks": (CLICKS, CLICK_SCHEMA)},
            build_join_kinds(),
            OUTPUT / "scenario",
            describe_rows=lambda rows: ", ".join(
                f"{r.impression_id}+{r.click_id or 'null'}" for r in rows
            ),
        )
        say(f"""CLK-3 came 18 minutes after IMP-3, outside the {CLICK_WINDOW_MINUTES}-minute
            bound: it matches nothing. The join's watermark is the MINIMUM of the two (each
            trails its stream by 2 minutes): batch 3 ran with 10:18, so no click could still
            come for impressions before 10:08, and the left outer join emitted IMP-2, 3 and 4
            with nulls.""")
        # The rows each join keeps in its state (both sides), after each micro-batch.
        lateness.print_state_rows(
            {label: runs[label].progress for label in ("left outer", "one watermark")}
        )
        say("""One watermark is the trap: Spark accepts a left outer join once the clicks (the
            side that may be null) have a watermark and the condition a time bound, and runs
            it. Its watermark is then the clicks' alone: 10:18 from batch 2 on, past the
            bounds of IMP-2, 3 and 4 (10:11 to 10:15). But Spark drops an impression from
            the join's state, and emits it with nulls, only if the impressions have a watermark
            of their own: IMP-2, 3 and 4 never come out, the state keeps every row it has read,
            and, with nothing to drop, Spark runs no extra batch for it. No error says so.""")

        banner(f"3. Live: impressions LEFT OUTER JOIN clicks ({args.source}), then CTR per ad")
        impressions, clicks = read_ad_events(spark, args.source, bootstrap)
        show_refusal(
            lambda: start_unbounded_join(impressions, clicks), "An outer join without watermarks"
        )
        queries = start_live_join(
            impressions, clicks, checkpoint_root(LESSON, args), pick_trigger(args, LIVE_TRIGGER)
        )
        name, script, options = AD_SIMULATORS[args.source]
        if args.available_now:
            # No simulator: the queries read only the ad events already there.
            ads = nullcontext(Simulator(name))
        else:
            ads = simulator_for_lesson(name, script, options, enabled=not args.no_simulator)
        with ads as simulator:
            run_queries(queries, args, until=simulator.done)
        report_ctr(spark, queries[0])


if __name__ == "__main__":
    run_lesson(main)
