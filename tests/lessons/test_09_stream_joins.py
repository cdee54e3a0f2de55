"""Lesson 09 (stream joins): the catalogue join with a CSV and a Delta static side, the
impressions/clicks join batch by batch, the CTR cutoff in any time zone, the live pipeline on
files and Kafka, and the lesson run as a learner runs it.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from common import paths
from common.parsing import valid_records
from common.schemas import CLICK_SCHEMA, ECOMMERCE_EVENT_SCHEMA, IMPRESSION_SCHEMA
from conftest import at, load_lesson, run_script
from infra.errors import CourseError
from infra.kafka import ensure_topics
from infra.runner import finish
from teaching.demos import replay, replay_streams, show_refusal
from teaching.lateness import state_rows
from teaching.microbatch import collect_batches, write_batches

lesson = load_lesson("09_stream_joins")
BASE_TIME = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)
EDITED_P001 = "Laptop Pro 15 (2025 edition - certified refurbished)"


def catalogue_rows(batch) -> list[tuple]:
    return [
        (
            row.event_id,
            row.product_id,
            row.product_name,
            row.category,
            row.list_price,
            row.known_product,
        )
        for row in batch.rows
    ]


def test_a_delta_catalogue_is_read_at_its_latest_version_and_an_edited_csv_only_to_its_old_length(
    spark, tmp_path
):
    csv, table = tmp_path / "catalogue.csv", tmp_path / "catalogue"
    lesson.write_catalogue(spark, csv=csv, table=table)

    runs = replay(
        spark,
        lesson.SHOP_EVENTS,
        ECOMMERCE_EVENT_SCHEMA,
        lesson.build_catalogue_joins(spark, csv, table),
        tmp_path / "scenario",
        describe_rows=str,
        show=False,
        edits={1: lambda: lesson.write_catalogue(spark, edit=True, csv=csv, table=table)},
    )

    before = [
        ("EVT-1", "P001", "Laptop Pro 15", "Electronics", 1299.99, True),
        ("EVT-2", "P012", "Sunglasses", "Fashion", 59.99, True),
        ("EVT-3", "P999", None, None, None, False),
    ]
    assert [catalogue_rows(batch) for batch in runs["delta"].batches] == [
        before,
        [
            ("EVT-4", "P001", EDITED_P001, "Electronics", 999.99, True),
            ("EVT-5", "P012", "Sunglasses", "Fashion", 59.99, True),
            ("EVT-6", "P013", "Phone Case", "Fashion", 19.99, True),
        ],
    ]
    # What Spark 4.2 does with the CSV: the file was listed with its length when the static
    # DataFrame was created. The edited line is read, but the lines pushed past the old
    # length (P012) and the appended one (P013) are not, and nothing says so.
    assert [catalogue_rows(batch) for batch in runs["csv"].batches] == [
        before,
        [
            ("EVT-4", "P001", EDITED_P001, "Electronics", 999.99, True),
            ("EVT-5", "P012", None, None, None, False),
            ("EVT-6", "P013", None, None, None, False),
        ],
    ]
    assert "P012,Sunglasses" in csv.read_text() and csv.read_text().endswith(
        "P013,Phone Case,Fashion,19.99\n"
    )


def test_a_catalogue_copy_that_python_wrote_is_refused_when_spark_reads_remote_storage(
    monkeypatch,
):
    # As --storage hdfs://... sets it: Spark would read the copy where Python never wrote it.
    monkeypatch.setattr(paths, "STORAGE_ROOT", paths.COURSE_HOME)
    monkeypatch.setattr(paths, "REMOTE_ROOT", "hdfs://nn:8020/course")

    with pytest.raises(
        CourseError, match="Spark reads hdfs://nn:8020/course/output/09_stream_joins,"
    ):
        lesson.read_catalogue_csv(None, paths.output_for("09_stream_joins") / "catalogue.csv")


SCENARIO_WATERMARKS = [
    "1970-01-01T00:00:00.000Z",
    "2025-01-15T10:00:00.000Z",
    "2025-01-15T10:03:00.000Z",
    "2025-01-15T10:18:00.000Z",
    "2025-01-15T10:28:00.000Z",
]


def joined_row(impression, ad, impression_time, click=None, click_time=None):
    return Row(
        impression_id=impression,
        ad_id=ad,
        user_id=None,
        impression_time=at(impression_time),
        click_id=click,
        click_time=at(click_time) if click_time else None,
    )


def test_inner_and_left_outer_joins_emit_exactly_these_rows_batch_by_batch(spark, tmp_path):
    runs = replay_streams(
        spark,
        {
            "impressions": (lesson.IMPRESSIONS, IMPRESSION_SCHEMA),
            "clicks": (lesson.CLICKS, CLICK_SCHEMA),
        },
        lesson.build_join_kinds(),
        tmp_path / "scenario",
        describe_rows=str,
        show=False,
    )

    matched_at_once = [joined_row("IMP-1", "AD-1", "10:00:00", "CLK-1", "10:03:00")]
    assert [batch.rows for batch in runs["inner"].batches] == [
        matched_at_once,
        [],
        [],
        [joined_row("IMP-5", "AD-1", "10:30:00", "CLK-5", "10:31:00")],
        [],
    ]
    # Batch 3 is the first whose watermark (10:18, the clicks' one: the minimum) is more than
    # 10 minutes past IMP-2, IMP-3 and IMP-4: only then can no click come for them.
    assert [batch.rows for batch in runs["left outer"].batches] == [
        matched_at_once,
        [],
        [],
        [
            joined_row("IMP-2", "AD-2", "10:01:00"),
            joined_row("IMP-3", "AD-1", "10:02:00"),  # CLK-3 came 18 minutes later: no match
            joined_row("IMP-4", "AD-2", "10:05:00"),
            joined_row("IMP-5", "AD-1", "10:30:00", "CLK-5", "10:31:00"),
        ],
        [],
    ]
    for label in ("inner", "left outer"):
        assert [batch.watermark for batch in runs[label].batches] == SCENARIO_WATERMARKS
    # The same left outer join with a watermark on the clicks only: Spark accepts and runs it,
    # with the clicks' watermark alone, but never drops an impression, so no row with null click
    # columns ever comes out (IMP-2, 3 and 4 are missing), and it keeps every row it has read.
    one_watermark = runs["one watermark"]
    assert [batch.rows for batch in one_watermark.batches] == [
        matched_at_once,
        [],
        [],
        [joined_row("IMP-5", "AD-1", "10:30:00", "CLK-5", "10:31:00")],
    ]
    assert [batch.watermark for batch in one_watermark.batches] == [
        "1970-01-01T00:00:00.000Z",
        "2025-01-15T10:01:00.000Z",
        "2025-01-15T10:18:00.000Z",
        "2025-01-15T10:18:00.000Z",
    ]
    assert state_rows(runs["left outer"].progress) == {0: 4, 1: 6, 2: 7, 3: 3, 4: 2}
    assert state_rows(one_watermark.progress) == {0: 4, 1: 6, 2: 7, 3: 8}  # 5 impressions, 3 clicks


@pytest.mark.parametrize("zone", ["Asia/Kolkata", "America/Los_Angeles", "UTC"])
def test_the_ctr_counts_impressions_settled_by_the_watermark_whatever_the_machines_zone(
    spark, monkeypatch, zone
):
    # The left outer join's output of the scenario, timestamps parsed by Spark (session zone UTC).
    joined = spark.createDataFrame(
        [
            ("IMP-1", "AD-1", "10:00", "CLK-1"),
            ("IMP-2", "AD-2", "10:01", None),
            ("IMP-3", "AD-1", "10:02", None),
            ("IMP-4", "AD-2", "10:05", None),
            ("IMP-5", "AD-1", "10:30", "CLK-5"),
        ],
        "impression_id STRING, ad_id STRING, clock STRING, click_id STRING",
    ).select(
        "impression_id",
        "ad_id",
        F.to_timestamp(F.concat(F.lit("2025-01-15 "), "clock", F.lit(":00"))).alias(
            "impression_time"
        ),
        "click_id",
    )
    # The Python process in another zone, as on a learner's laptop that did not pin it.
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        settled = [
            tuple(row)
            for row in lesson.build_ctr_per_ad(joined, "2025-01-15T10:18:00.000Z").collect()
        ]
        everything = [
            tuple(row)
            for row in lesson.build_ctr_per_ad(joined, "1970-01-01T00:00:00.000Z").collect()
        ]
    finally:
        monkeypatch.undo()
        time.tzset()
    # Watermark 10:18 minus the 10-minute click window: impressions before 10:08 (UTC) are final.
    assert settled == [("AD-1", 2, 1, 50.0), ("AD-2", 2, 0, 0.0)]
    assert everything == [("AD-1", 3, 2, 66.7), ("AD-2", 2, 0, 0.0)]  # no watermark yet: no cutoff


def generated_ads(count: int):
    """The ad generator's events with a fixed base time, and the (impression, click) pairs
    within the bound."""
    from data_generators.generate_ad_events import make_ad_events

    impressions, clicks = make_ad_events(count, base_time=BASE_TIME)
    shown = {
        i["impression_id"]: datetime.fromisoformat(i["impression_time"].replace("Z", "+00:00"))
        for i in impressions
    }
    in_bound = {
        (c["impression_id"], c["click_id"])
        for c in clicks
        if datetime.fromisoformat(c["click_time"].replace("Z", "+00:00"))
        - shown[c["impression_id"]]
        <= timedelta(minutes=10)
    }
    return impressions, clicks, shown, in_bound


def test_the_live_pipeline_on_files_joins_every_click_in_the_bound_and_quarantines_bad_records(
    spark, tmp_path
):
    from data_generators.generate_ad_events import make_ad_timeline, split_into_files

    count = 300  # 15 minutes of impressions: the older ones are settled by the end
    _, clicks, shown, in_bound = generated_ads(count)
    assert 0 < len(in_bound) < len(clicks)  # the generator makes some clicks outside the bound
    chunks = split_into_files(make_ad_timeline(count, base_time=BASE_TIME), BASE_TIME, 20, count)
    folder = tmp_path / "ads"
    write_batches(folder / "impressions", [chunk[0] for chunk in chunks])
    write_batches(folder / "clicks", [chunk[1] for chunk in chunks])
    (folder / "clicks" / "broken.json").write_text(
        '{"click_id": "CLK-X", "click_time": "2025-01-15T10:31:00Z"}\n'
        '{"click_id": "CLK-Y", "impression_id": "IMP-1", "click_t\n'
    )
    impressions, clicks = lesson.read_ad_events(spark, "files", folder=folder)

    queries = lesson.start_live_join(
        impressions, clicks, tmp_path / "chk", {"availableNow": True}, output=tmp_path / "out"
    )
    finish(queries)

    rows = lesson.read_joined(spark, tmp_path / "out" / "ad_joins").collect()
    assert {(row.impression_id, row.click_id) for row in rows if row.click_id} == in_bound
    # The impressions more than 10 minutes older than the last watermark came out without a click.
    watermark = datetime.fromisoformat(
        queries[0].lastProgress["eventTime"]["watermark"].replace("Z", "+00:00")
    )
    clicked = {impression for impression, _ in in_bound}
    unmatched = sorted(row.impression_id for row in rows if row.click_id is None)
    settled = [
        impression
        for impression, moment in shown.items()
        if moment + timedelta(minutes=10) < watermark
    ]
    assert unmatched and unmatched == sorted(
        impression for impression in settled if impression not in clicked
    )
    assert len(rows) == len({row.impression_id for row in rows})  # every impression at most once
    quarantine = [
        json.loads(line)
        for path in sorted((tmp_path / "out" / "quarantine").glob("*.json"))
        for line in path.read_text().splitlines()
    ]
    assert sorted((record["kind"], record["reason"]) for record in quarantine) == [
        ("click", "missing impression_id"),
        ("click", "not a JSON object"),
    ]


def test_an_outer_join_without_watermarks_is_refused_at_start(spark, tmp_path):
    impressions, clicks = lesson.read_ad_events(spark, "files", folder=tmp_path / "ads")

    message = show_refusal(
        lambda: lesson.start_unbounded_join(impressions, clicks), "An outer join"
    )

    assert "not supported without a watermark" in message


@pytest.mark.kafka
@pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")
def test_the_kafka_source_joins_the_producers_impressions_and_clicks(
    spark, kafka_bootstrap, topic, tmp_path
):
    from data_generators import kafka_producer

    topics = (topic("impressions"), topic("clicks"))
    ensure_topics(kafka_bootstrap, topics, partitions=2)
    count = 60
    *_, in_bound = generated_ads(count)
    kafka_producer.send_messages(
        kafka_bootstrap,
        kafka_producer.build_messages(
            "ads", count, base_time=BASE_TIME, impressions_topic=topics[0], clicks_topic=topics[1]
        ),
    )
    impressions, clicks = lesson.read_ad_events(spark, "kafka", kafka_bootstrap, topics=topics)

    run = collect_batches(
        lesson.build_ad_join(
            valid_records(impressions, IMPRESSION_SCHEMA),
            valid_records(clicks, CLICK_SCHEMA),
            "inner",
        ),
        tmp_path / "chk",
    )

    assert sorted((row.impression_id, row.click_id) for row in run.rows()) == sorted(in_bound)


@pytest.mark.smoke
def test_lesson_09_runs_on_files_as_a_learner_runs_it(course_home):
    from data_generators.generate_ad_events import make_ad_events

    impressions, clicks = make_ad_events(60, base_time=BASE_TIME)
    write_batches(course_home / "data" / "ad_events" / "impressions", [impressions])
    write_batches(course_home / "data" / "ad_events" / "clicks", [clicks])

    result = run_script(
        "streaming_tutorial/09_stream_joins.py",
        "--source",
        "files",
        "--available-now",
        home=course_home,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert (
        "Batch 1 reads: EVT-4 P001, EVT-5 P012, EVT-6 P013\n"
        "  csv    EVT-4 999.99, EVT-5 unknown, EVT-6 unknown\n"
        "  delta  EVT-4 999.99, EVT-5 59.99, EVT-6 19.99\n"
    ) in out
    assert (
        "  left outer     IMP-2+null, IMP-3+null, IMP-4+null, IMP-5+CLK-5   [watermark 10:18:00]\n"
        "  one watermark  IMP-5+CLK-5   [watermark 10:18:00]\n"
    ) in out
    assert "  3      3                      8\n  4      2                      -\n" in out
    assert "An outer join without watermarks fails:\n  Stream-stream LeftOuter join" in out
    assert (
        "CTR per ad over the impressions settled by the join's last watermark (2025-01-15T10:"
        in out
    )
    assert "|ad_id|impressions|clicks|ctr_percent|" in out
