"""13.2: the learner predicts, for each query in the pristine file's QUERIES, whether real-time
mode runs it, start() refuses it, or it fails once running.

The check starts each query, in the order of QUERIES, on a real Kafka broker: a topic with the
scenario's words, an output topic of its own, a fresh checkpoint. start() raising is "refused at
start"; a result on the output topic while the query is active is "runs"; the query ending with
an exception before any result is "fails once running". Nothing is looked up in a table: a Spark
version that accepts more changes the answer.

Where the broker is: practice.session.exercise_kafka (KAFKA_BOOTSTRAP_SERVERS, a broker already
running, or the course's own, started once and stopped when the process ends). Where Spark is: the
session the check is given, which has the Kafka connector (practice.session.exercise_session, and
the test suite's).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

from common import paths
from infra.kafka import client_options, delete_topics, end_offsets, ensure_topics
from infra.runner import wait_until
from practice import catalog
from practice.checking import is_spark_error
from practice.observe import Batch, Observation
from practice.session import exercise_kafka
from practice.spec import Exercise, Mistake, Scenario

OUTCOMES = "what each query does"
ERRORS = "Spark's error class"
# A first result or a failure comes within seconds (the first real-time batch plans the query
# and opens its Kafka clients: about 3 s on 2 cores); this bounds a query that does neither.
WAIT_SECONDS = 120
# What Spark did, by session, pristine file and scenario (run_queries).
OBSERVED: dict = {}
# The pristine file's names for the three outcomes.
RUNS, REFUSED_AT_START, FAILS_ONCE_RUNNING = "runs", "refused at start", "fails once running"


def error_class(error: BaseException) -> str:
    """'STREAMING_REAL_TIME_MODE.OUTPUT_MODE_NOT_SUPPORTED': the first error class in Spark's
    message that is not the STREAM_FAILED wrapper; '' when it has none."""
    for found in re.finditer(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", str(error)):
        if found.group(1) != "STREAM_FAILED":
            return found.group(1)
    return ""


def record_count(bootstrap: str, topic: str) -> int:
    return sum(end_offsets(bootstrap, topic).values())


def outcome_of(start, spark, where) -> tuple[str, str]:
    """(what happened, Spark's error class or '') for one query of QUERIES."""
    try:
        query = start(spark, where)
    except Exception as error:
        if not is_spark_error(error):
            raise  # a Python error in the query's code: the check reports it
        return REFUSED_AT_START, error_class(error)
    try:
        wait_until(
            lambda: not query.isActive or record_count(where.bootstrap, where.results) > 0,
            f"{start.__name__}: a result on its output topic, or a failure,",
            WAIT_SECONDS,
        )
        if query.isActive:
            return RUNS, ""
        failure = query.exception()
        if failure is None:
            raise RuntimeError(f"{start.__name__}: the query stopped without a result or an error")
        return FAILS_ONCE_RUNNING, error_class(failure)
    finally:
        if query.isActive:
            query.stop()


def send_words(bootstrap: str, topic: str, words: list[dict]) -> None:
    """The words as JSON messages, each with the time it was sent (sent_ms), as lesson 13's."""
    from kafka import KafkaProducer

    producer = KafkaProducer(**client_options(bootstrap), acks="all")
    try:
        for word in words:
            message = {**word, "sent_ms": int(time.time() * 1000)}
            producer.send(topic, json.dumps(message).encode())
        producer.flush()
    finally:
        producer.close(timeout=5)


def outcomes_of(spark, module, bootstrap: str, words: list[dict], workdir: Path) -> dict:
    """{query name: (outcome, error class)} for every query of ``module``.QUERIES."""
    from infra.files import json_lines, write_atomically

    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    folder = workdir / "files"
    write_atomically(folder, "words.json", json_lines(words))
    run = uuid.uuid4().hex[:8]
    topic = f"exercise-13-2-words-{run}"
    results = {start.__name__: f"exercise-13-2-{start.__name__}-{run}" for start in module.QUERIES}
    # One partition each: real-time mode holds a core per partition for a whole batch.
    ensure_topics(bootstrap, [topic, *results.values()], partitions=1)
    try:
        send_words(bootstrap, topic, words)
        outcomes = {}
        for start in module.QUERIES:
            where = SimpleNamespace(
                bootstrap=bootstrap,
                topic=topic,
                folder=folder,
                results=results[start.__name__],
                checkpoint=workdir / "checkpoints" / start.__name__,
            )
            outcomes[start.__name__] = outcome_of(start, spark, where)
        return outcomes
    finally:
        delete_topics(bootstrap, [topic, *results.values()])


def run_queries(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The exercise's run: every query of the pristine file, started on a real broker.

    One Batch with a row (query, outcome) per query; the facts OUTCOMES (what the learner
    predicts) and ERRORS (Spark's error class for each refused query). The queries are the
    pristine file's, whatever the learner's says: in one session (watch mode, the tests of the
    shipped mistakes) the first run's observation serves every check.
    """
    key = (spark.sparkContext.applicationId, catalog.pristine(exercise).read_text(), repr(scenario))
    if key not in OBSERVED:
        OBSERVED[key] = observe_queries(spark, exercise, scenario, workdir)
    return OBSERVED[key]


def observe_queries(spark, exercise, scenario, workdir: Path) -> Observation:
    """run_queries' work, done once per session."""
    query_module = catalog.load_module(catalog.pristine(exercise), "pristine")
    outcomes = outcomes_of(spark, query_module, exercise_kafka(), scenario.batches[0], workdir)
    rows = sorted((name, outcome) for name, (outcome, _) in outcomes.items())
    return Observation(
        ["query", "outcome"],
        [Batch(rows)],
        facts={
            OUTCOMES: {name: outcome for name, (outcome, _) in outcomes.items()},
            ERRORS: {name: error for name, (_, error) in outcomes.items() if error},
        },
    )


def outcomes(observation: Observation) -> dict:
    return observation.facts[OUTCOMES]


def predicted_as(guess, actual, query: str, wrong: str) -> bool:
    """Spark's outcome for ``query`` is not ``wrong``, and the prediction says ``wrong``."""
    return isinstance(guess, dict) and actual.get(query) != wrong and guess.get(query) == wrong


def aggregation_runs(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_count_words", RUNS)


def python_udf_runs(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_shout_with_udf", RUNS)


def refused(guess, actual, query: str) -> bool:
    """Spark ran ``query``; the prediction says it is refused (at start or once running)."""
    return (
        isinstance(guess, dict)
        and actual.get(query) == RUNS
        and guess.get(query) in (REFUSED_AT_START, FAILS_ONCE_RUNNING)
    )


def join_refused(guess, actual) -> bool:
    return refused(guess, actual, "start_tag_words")


def foreach_batch_runs(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_shout_in_batches", RUNS)


def refused_before_running(guess, actual) -> bool:
    """A query Spark accepted at start() and stopped once it ran is predicted refused at start."""
    return isinstance(guess, dict) and any(
        outcome == FAILS_ONCE_RUNNING and guess.get(name) == REFUSED_AT_START
        for name, outcome in actual.items()
    )


def watermark_refused(guess, actual) -> bool:
    return refused(guess, actual, "start_shout_with_watermark")


EXERCISE = Exercise(
    title="What real-time mode runs",
    kind="predict",
    practises="real-time mode in Spark 4.2: which queries it runs, which start() refuses, which "
    "fail once running",
    function="start_shout",
    schemas="id INT, word STRING, sent_ms BIGINT",
    run=run_queries,
    predicted=outcomes,
    kafka=True,
    why=(
        "Real-time mode reaches milliseconds by giving up what needs a batch boundary: its "
        "long-running tasks pass each record on at once, so Spark 4.2 runs only operators that "
        "handle one record at a time with no shuffle and no state (select, where, Spark's own "
        "functions, explode, union, withWatermark, a broadcast join with a static table), reads "
        "only Kafka, writes only to Kafka, console or foreach, and only in update mode. A "
        "Python UDF, an aggregation or dropDuplicates is refused like any operator off that "
        "list. What start() knows (the output mode, the sink, the trigger) it checks at once; "
        "the plan's operators and the source are checked when the first batch is planned, so "
        "start() returns and the query dies a moment later: watch query.exception()."
    ),
    hints=[
        "What does real-time mode give up to pass each record on in milliseconds? Its tasks run "
        "for a whole batch and never wait for one another: think of what needs a shuffle, state "
        "kept between records, or a Python process. And which of a query's parts does Spark "
        "know when start() is called, before it plans a first batch?",
        "lesson 13, `start_realtime_append`, `start_realtime_deduplicated`, "
        "`start_realtime_rate` and `start_realtime_memory` (part 3, 'Real-time mode: what it "
        "refuses in Spark 4.2'): their docstrings list what it refuses, and say which of them "
        "start() accepts.",
        "For each query, write down four things: its source, every operator of its plan "
        "(df.explain() names them: Project, Filter, BroadcastHashJoin, HashAggregate, "
        "ArrowEvalPython...), its output mode and its sink. Compare each with lesson 13's lists. "
        "Then ask where a refusal would come from: the output mode and the sink are fixed when "
        "start() is called; the operators and the source only when the first batch is planned.",
    ],
    scenarios=[
        # Three words; the second is filtered out by start_shout, the first gives it a result.
        Scenario(
            [[{"id": 1, "word": "spark"}, {"id": 2, "word": "kafka"}, {"id": 3, "word": "spark"}]]
        )
    ],
    mistakes=[
        Mistake(
            "aggregation_runs",
            "Spark did not run start_count_words: in Spark 4.2 real-time mode refuses every "
            "aggregation, in update mode too. A count per word needs a shuffle and state kept "
            "between batches (HashAggregate, StateStoreSave), and neither is on its list of "
            "operators.",
            when=aggregation_runs,
        ),
        Mistake(
            "python_udf_runs",
            "Spark did not run start_shout_with_udf: a Python UDF runs in a Python process beside "
            "the task (an EvalPython operator in the plan), and Spark 4.2's real-time mode refuses "
            "every Python operator. F.upper, Spark's own function, does the same in the JVM and "
            "runs.",
            when=python_udf_runs,
        ),
        Mistake(
            "foreach_batch_runs",
            "start() refused start_shout_in_batches: foreachBatch is not among real-time mode's "
            "sinks in Spark 4.2 (Kafka, console and foreach: lesson 13, start_realtime_memory). "
            "The sink is known when start() is called, so that is where Spark says no.",
            when=foreach_batch_runs,
        ),
        Mistake(
            "join_refused",
            "Spark ran start_tag_words: a broadcast join with a static table is on real-time "
            "mode's list. Every task gets its own copy of the small table, so the join needs no "
            "shuffle and keeps no state. A stream-stream join would be refused.",
            when=join_refused,
        ),
        Mistake(
            "watermark_refused",
            "Spark ran start_shout_with_watermark: withWatermark is on real-time mode's list. A "
            "watermark alone keeps no state; only an operator that uses it (an aggregation, a "
            "dedup, a join) would, and that operator is what real-time mode refuses.",
            when=watermark_refused,
        ),
        Mistake(
            "refused_before_running",
            "start() accepted a query you predicted it refuses: start() checks what it knows "
            "at once (the output mode, the sink, the trigger); the source and the plan's "
            "operators are checked when the first batch is planned, so the query starts and "
            "then fails. Look at query.exception().",
            when=refused_before_running,
        ),
    ],
)
