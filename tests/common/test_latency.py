"""lesson13_latency: percentiles, and results stamped by the broker (the test run's own Kafka)."""

from __future__ import annotations

from types import SimpleNamespace

import lesson13_latency as latency
import pytest

from infra.errors import CourseError
from infra.kafka import consume_all, ensure_topics

pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


def test_percentile_is_the_nearest_rank():
    values = [7, 1, 3, 9, 5, 2, 8, 4, 6, 10]
    assert [latency.percentile(values, q) for q in (10, 50, 90, 100)] == [1, 5, 9, 10]
    assert latency.percentile([42], 90) == 42
    with pytest.raises(ValueError):
        latency.percentile([], 50)


def test_summary_rows_give_p50_and_p90_per_label():
    assert latency.summary_rows({"fast": [1, 2, 3, 4], "slow": [100.4]}) == [
        ("fast", 4, "2 ms", "4 ms"),
        ("slow", 1, "100 ms", "100 ms"),
    ]


@pytest.mark.kafka
def test_sent_messages_carry_their_time_and_stamped_topics_give_the_broker_time(
    kafka_bootstrap, topic
):
    source, stamped = topic("timed"), topic("stamped")
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    latency.create_stamped_topics(kafka_bootstrap, [stamped])

    sent = latency.send_timed(kafka_bootstrap, source, [{"id": 1}, {"id": 2}])
    # A result written by hand, as a query would: it carries sent_ms; the broker stamps it.
    latency.send_timed(kafka_bootstrap, stamped, [{"id": 1}])

    assert [record["id"] for record in sent] == [1, 2] and all(
        record["sent_ms"] > 0 for record in sent
    )
    [(value, measured)] = latency.stamped_results(kafka_bootstrap, stamped)
    [record] = consume_all(kafka_bootstrap, stamped)
    assert record.timestamp_type == latency.LOG_APPEND_TIME
    assert value["id"] == 1 and measured == record.timestamp - value["sent_ms"]
    assert latency.record_count(kafka_bootstrap, stamped) == 1
    with pytest.raises(CourseError, match="create it with create_stamped_topics"):
        latency.stamped_results(kafka_bootstrap, source)  # producer timestamps: refused


@pytest.mark.kafka
def test_fresh_stamped_topics_start_empty(kafka_bootstrap, topic):
    stamped = topic("fresh")
    latency.create_stamped_topics(kafka_bootstrap, [stamped])
    latency.send_timed(kafka_bootstrap, stamped, [{"id": 1}])

    latency.create_stamped_topics(kafka_bootstrap, [stamped], fresh=True)

    assert latency.record_count(kafka_bootstrap, stamped) == 0


def context(master: str, default_parallelism: int = 2) -> SimpleNamespace:
    """What cores_missing reads of a SparkContext."""
    return SimpleNamespace(master=master, defaultParallelism=default_parallelism)


@pytest.mark.parametrize(("master", "cores"), [("local", 1), ("local[1]", 1), ("local[1,3]", 1)])
def test_real_time_beside_micro_batches_on_too_few_local_cores_is_explained(master, cores):
    from lesson13_latency import cores_missing

    advice = cores_missing(
        context(master, default_parallelism=8), 1
    )  # a local master's name counts

    assert advice is not None and f"This session has {cores} ({master})" in advice
    assert "2 cores for this 1-partition topic" in advice and "--master 'local[2]'" in advice


def test_enough_cores_is_not_questioned_and_a_cluster_counts_its_executors_cores(monkeypatch):
    from lesson13_latency import cores_missing

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    masters = ("local[2]", "local[*]", "spark://127.0.0.1:7077", "yarn")
    assert [cores_missing(context(master), 1) for master in masters] == [None, None, None, None]
    assert (
        cores_missing(context("local[2]"), 2) is not None
    )  # two real-time partitions and the micro-batches: 3
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert "This session has 1 (local[*])" in cores_missing(context("local[*]"), 1)
    # A 2-core worker cannot hold 3 real-time partitions and the micro-batch query.
    advice = cores_missing(context("spark://127.0.0.1:7077", default_parallelism=2), 3)
    assert (
        "This session has 2 (spark://127.0.0.1:7077)" in advice
        and "executors have 4 cores or more" in advice
    )
