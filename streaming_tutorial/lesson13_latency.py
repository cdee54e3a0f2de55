"""End-to-end latency through Kafka: timestamped messages in, their results out, percentiles.

How lesson 13 measures Kafka -> Spark -> Kafka::

    # The broker stamps each result with the moment it wrote it.
    create_stamped_topics(bootstrap, ["out-realtime", "out-microbatch"])
    latencies = measure_latency(bootstrap, "in", {"real-time": "out-realtime", ...},
                                [{"id": n, "word": "spark"} for n in range(100)], rate=20,
                                warm_up_record=lambda n: {"id": -n, "word": "spark"})
    p50, p90 = percentile(latencies["real-time"], 50), percentile(latencies["real-time"], 90)

Each message carries the moment it was sent (``sent_ms``, epoch milliseconds), and the
query must carry that field into its result. The output topics are created with
``message.timestamp.type=LogAppendTime``: the broker stamps every result with the moment
it wrote it. Latency = that stamp - ``sent_ms``: the whole way in, through Spark, and out
again, on one machine's clock, and nothing of the reading side's own delay.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from typing import Callable, Mapping, Sequence

from infra.errors import CourseError
from infra.kafka import client_options, consume_all, end_offsets, ensure_topics, recreate_topics
from infra.runner import wait_until

SENT_FIELD = "sent_ms"  # when a message was sent, in epoch milliseconds; results must carry it
LOG_APPEND_TIME = 1  # a record's timestamp_type when the broker stamped it
WARM_UP_EVERY_SECONDS = 0.5  # the pace of warm-up messages
# A topic setting: a record's timestamp is when the broker wrote it.
BROKER_STAMPED = {"message.timestamp.type": "LogAppendTime"}


def create_stamped_topics(
    bootstrap: str,
    topics: Sequence[str],
    partitions: int = 1,
    *,
    fresh: bool = False,
    timeout: float = 60.0,
) -> None:
    """Create the topics that do not exist yet, each record stamped by the broker when written.

    ``fresh``: delete them first, so they start empty.
    """
    if fresh:
        recreate_topics(bootstrap, topics, partitions, timeout, configs=BROKER_STAMPED)
    else:
        ensure_topics(bootstrap, topics, partitions, configs=BROKER_STAMPED)


def send_timed(
    bootstrap: str, topic: str, records: Sequence[dict], *, rate: float = 0.0
) -> list[dict]:
    """Send each record as JSON with ``sent_ms`` added, ``rate`` per second (0: at once);
    return them.

    One record at a time, flushed at once (``linger_ms=0``): ``sent_ms`` is taken just
    before the record leaves, so the producer's batching is not counted as Spark's latency.
    """
    from kafka import KafkaProducer

    producer = KafkaProducer(**client_options(bootstrap), linger_ms=0, acks=1)
    sent = []
    started = time.monotonic()
    try:
        for number, record in enumerate(records, start=1):
            stamped = {**record, SENT_FIELD: int(time.time() * 1000)}
            producer.send(topic, json.dumps(stamped).encode())
            producer.flush()
            sent.append(stamped)
            delay = started + number / rate - time.monotonic() if rate > 0 else 0
            if delay > 0:
                time.sleep(delay)  # pacing against the start, so the rate does not drift
    finally:
        producer.close(timeout=5)
    return sent


def record_count(bootstrap: str, topic: str) -> int:
    """How many records ``topic`` holds (its end offsets, summed)."""
    return sum(end_offsets(bootstrap, topic).values())


def warm_up(
    bootstrap: str,
    source: str,
    outputs: Sequence[str],
    make_record: Callable[[int], dict],
    timeout: float = 120.0,
) -> int:
    """Send a message every half second until each output topic has a new record; return how
    many were sent.

    A query's first micro-batch (or real-time batch) plans the query and opens its Kafka
    clients: seconds, not milliseconds. Measuring starts once every query has answered.
    """
    before = {topic: record_count(bootstrap, topic) for topic in outputs}
    sent = 0

    def answered() -> bool:
        nonlocal sent
        if all(record_count(bootstrap, topic) > before[topic] for topic in outputs):
            return True
        sent += 1
        send_timed(bootstrap, source, [make_record(sent)])
        time.sleep(WARM_UP_EVERY_SECONDS)
        return False

    wait_until(answered, f"a first result in {', '.join(outputs)}", timeout)
    return sent


def stamped_results(bootstrap: str, topic: str) -> list[tuple[dict, float]]:
    """Every result in ``topic``: (its JSON value, its latency in ms: the broker's stamp minus
    the ``sent_ms`` the result carries)."""
    results = []
    for record in consume_all(bootstrap, topic):
        if record.timestamp_type != LOG_APPEND_TIME:
            raise CourseError(
                f"Topic '{topic}' keeps its producers' timestamps, not the broker's: create it "
                "with create_stamped_topics (message.timestamp.type=LogAppendTime)."
            )
        value = json.loads(record.value)
        results.append((value, record.timestamp - value[SENT_FIELD]))
    return results


def measure_latency(
    bootstrap: str,
    source: str,
    outputs: Mapping[str, str],
    records: Sequence[dict],
    *,
    rate: float,
    warm_up_record: Callable[[int], dict],
    timeout: float = 120.0,
    key: str = "id",
) -> dict[str, list[float]]:
    """Warm the queries up, send ``records`` to ``source`` at ``rate``, wait until every output
    topic holds a result for each (bounded by ``timeout``); ``{label: latencies in ms}``, one
    per record, in the order sent.

    ``outputs`` maps a label to the output topic of a running query. Records are told
    apart by their ``key`` field, which must be unique and carried into the results; a
    result written twice (Kafka sinks are at-least-once) counts once, the first time.
    """
    topics = list(outputs.values())
    warm_up(bootstrap, source, topics, warm_up_record, timeout)
    sent = send_timed(bootstrap, source, records, rate=rate)
    wanted = [record[key] for record in sent]

    def first_results(topic: str) -> dict:
        first = {}
        for value, latency in stamped_results(bootstrap, topic):
            first.setdefault(value.get(key), latency)
        return first

    def complete() -> bool:
        return all(set(wanted) <= first_results(topic).keys() for topic in topics)

    wait_until(
        complete, f"a result for each of the {len(wanted)} messages in {', '.join(topics)}", timeout
    )
    measured = {}
    for label, topic in outputs.items():
        first = first_results(topic)
        measured[label] = [first[ident] for ident in wanted]
    return measured


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile: the smallest value with at least q% of the values
    at or below it."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)), 1) - 1]


def summary_rows(latencies: Mapping[str, Sequence[float]]) -> list[tuple]:
    """(label, messages, p50, p90) for each label: rows for ``narration.print_table``."""
    return [
        (label, len(values), f"{percentile(values, 50):.0f} ms", f"{percentile(values, 90):.0f} ms")
        for label, values in latencies.items()
    ]


def cores_missing(context, real_time_partitions: int) -> str | None:
    """Why real-time mode cannot run beside a micro-batch query on this SparkContext, or None
    if it can.

    Real-time mode holds a core per Kafka partition for its whole batch, and the micro-batch
    query measured beside it needs one more. With fewer, Spark 4.2 does not fail, but the
    measurement goes wrong: with no core left, the micro-batch query runs only between
    real-time batches (on local[1], its p50 was 7.6 s: the wait for a core, not trigger 0);
    with fewer cores than partitions, the partitions beyond them are never read, and the
    measurement would wait for results that never come.

    A local master says its cores in its name (``local``, ``local[N]``, ``local[N,F]``,
    ``local[*]``); on a cluster, the executors' cores are the context's defaultParallelism.
    """
    master = context.master
    needed = real_time_partitions + 1
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if found is None:
        cores = context.defaultParallelism
        instead = f"on a cluster whose executors have {needed} cores or more"
    else:
        cores = (os.cpu_count() or 1) if found[1] == "*" else int(found[1] or 1)
        instead = (
            f"with --master 'local[{needed}]' or more (the default, local[*], takes every core), "
            f"on a machine with at least {needed} cores"
        )
    if cores >= needed:
        return None
    return (
        f"Skipped: real-time mode holds a core per Kafka partition for its whole batch, and the "
        f"micro-batch query measured beside it needs one more: {needed} cores for this "
        f"{real_time_partitions}-partition topic. This session has {cores} ({master}). "
        f"Run the lesson {instead}."
    )
