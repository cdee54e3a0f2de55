"""infra.runner: the one run-control policy every lesson uses, on real queries."""

from __future__ import annotations

from argparse import Namespace
from types import SimpleNamespace

import pytest
from pyspark.errors import StreamingQueryException

from infra.files import json_lines, write_atomically
from infra.runner import (
    drain,
    first_batch_running,
    foreach_batch,
    is_real_time,
    pick_trigger,
    run_queries,
    stop_between_batches,
    wait_until,
)


def memory_query(spark, folder, name, checkpoint, **trigger):
    stream = spark.readStream.schema("n INT").option("maxFilesPerTrigger", 1).json(str(folder))
    return (
        stream.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(**(trigger or {"processingTime": "100 milliseconds"}))
        .start()
    )


def write_files(folder, count):
    for number in range(count):
        write_atomically(folder, f"part-{number}.json", json_lines([{"n": number}]))


def test_pick_trigger_follows_the_flags():
    assert pick_trigger(Namespace(available_now=False), "2 seconds") == {
        "processingTime": "2 seconds"
    }
    assert pick_trigger(Namespace(available_now=True), "2 seconds") == {"availableNow": True}
    assert pick_trigger(Namespace(), "5 seconds") == {"processingTime": "5 seconds"}


def test_a_finished_input_is_drained_then_the_query_stops(spark, tmp_path):
    write_files(tmp_path / "in", 5)
    query = memory_query(spark, tmp_path / "in", "drained", tmp_path / "cp")
    calls = []

    # The input is done from the start: every file is processed, then the query stops.
    run_queries(
        [query],
        Namespace(duration=600),
        until=lambda: True,
        every=lambda: calls.append(1),
        every_seconds=0,
    )

    assert not query.isActive
    assert sorted(row.n for row in spark.table("drained").collect()) == [0, 1, 2, 3, 4]
    assert calls, "every() runs while the queries run"


def test_available_now_runs_to_the_end_whatever_the_duration(spark, tmp_path):
    write_files(tmp_path / "in", 4)
    query = memory_query(spark, tmp_path / "in", "backfill", tmp_path / "cp", availableNow=True)

    run_queries([query], Namespace(duration=0.001, available_now=True))

    assert sorted(row.n for row in spark.table("backfill").collect()) == [0, 1, 2, 3]
    assert len([p for p in query.recentProgress if p["numInputRows"]]) == 4  # one file per batch


def test_drain_processes_what_is_there_then_stops_the_query(spark, tmp_path):
    write_files(tmp_path / "in", 3)
    query = memory_query(spark, tmp_path / "in", "drained_all", tmp_path / "cp")

    drain([query])

    assert not query.isActive
    assert sorted(row.n for row in spark.table("drained_all").collect()) == [0, 1, 2]
    assert not is_real_time(query)


class RealTimeQuery:
    """A stand-in for a real-time query: always in a batch; batch 4 ends after a few looks."""

    status = {"isTriggerActive": True}

    def __init__(self):
        self.looks, self.isActive = 0, True

    @property
    def lastProgress(self):
        self.looks += 1
        return {"batchId": 3 if self.looks < 4 else 4}

    def stop(self):
        self.stopped_at_look, self.isActive = self.looks, False


def test_wait_until_names_what_did_not_happen_or_why_it_never_will():
    with pytest.raises(TimeoutError, match="the answer did not happen within 0.01 s"):
        wait_until(lambda: False, "the answer", 0.01)
    with pytest.raises(RuntimeError, match="^the server ended$"):
        wait_until(
            lambda: False, "the answer", 60, failed=lambda: "the server ended", error=RuntimeError
        )
    looks = iter([False, False, True])
    wait_until(lambda: next(looks), "the third look", 60, poll=0)


def test_a_real_time_query_stops_as_soon_as_a_batch_ends():
    query = RealTimeQuery()

    stop_between_batches(query, wait=30)

    assert query.stopped_at_look == 4  # the first look that saw batch 4's report


def test_a_backlog_stops_after_the_running_batch_not_at_its_end(spark, tmp_path):
    # Ctrl-C during --available-now: the query is never idle, batch follows batch. It must stop
    # once the running batch commits, not after every remaining file.
    write_files(tmp_path / "in", 40)
    query = memory_query(spark, tmp_path / "in", "backlog", tmp_path / "cp", availableNow=True)
    while query.isActive and query.lastProgress is None:  # batch 0 has committed
        query.awaitTermination(0.05)

    stop_between_batches(query, wait=60)

    assert not query.isActive and query.exception() is None
    committed = len(
        [name for name in (tmp_path / "cp" / "commits").iterdir() if name.name.isdigit()]
    )
    rows = spark.table("backlog").count()
    assert 1 <= committed < 40, (
        f"{committed} batches committed: the stop waited for the whole backlog"
    )
    # One file per batch. The next batch may have reached the memory sink before the stop
    # cancelled it uncommitted (a restart would run it again): at most one more.
    assert committed <= rows <= committed + 1


def test_the_duration_stops_an_endless_query_between_batches(spark):
    query = spark.readStream.format("rate").load().writeStream.format("noop").start()

    # 0.0004 s once became awaitTermination(0 ms), which the JVM refuses.
    run_queries([query], Namespace(duration=0.0004))

    assert not query.isActive
    assert query.exception() is None


def test_a_failing_query_raises_its_failure(spark, tmp_path):
    write_files(tmp_path / "in", 1)

    def broken(batch, batch_id):
        raise ValueError("a bug in the sink")

    stream = spark.readStream.schema("n INT").json(str(tmp_path / "in"))
    query = (
        stream.writeStream.foreachBatch(broken)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .start()
    )

    with pytest.raises(StreamingQueryException, match="a bug in the sink"):
        run_queries([query], Namespace(duration=600))
    assert not query.isActive


def fake_query(progress, trigger_active):
    return SimpleNamespace(recentProgress=progress, status={"isTriggerActive": trigger_active})


def test_first_batch_grace_applies_only_while_a_first_batch_runs():
    assert first_batch_running([fake_query([], False)])  # still starting: no progress at all yet
    assert first_batch_running([fake_query([], True)])
    assert first_batch_running(
        [fake_query([{"numInputRows": 0}], True)]
    )  # first batch with input runs
    assert not first_batch_running(
        [fake_query([{"numInputRows": 0}], False)]
    )  # ran, and no input came
    assert not first_batch_running(
        [fake_query([{"numInputRows": 3}], True)]
    )  # a batch with input is done


def test_foreach_batch_turns_an_interruption_into_one_line_and_passes_other_errors():
    def interrupted(batch, batch_id):
        raise RuntimeError(
            "An error occurred while calling o139.collectToPython.\n: "
            "java.lang.InterruptedException\n" + "\tat java.base/...\n" * 500
        )

    def broken(batch, batch_id):
        raise ValueError("a real bug")

    with pytest.raises(RuntimeError) as caught:
        foreach_batch(interrupted)(None, 0)
    assert str(caught.value) == (
        "py4j.protocol.Py4JJavaError: An error occurred while calling a Spark job: "
        "java.lang.InterruptedException"
    )
    assert caught.value.__suppress_context__
    with pytest.raises(ValueError, match="a real bug"):
        foreach_batch(broken)(None, 0)
    assert foreach_batch(lambda batch, batch_id: batch_id * 2)(None, 21) == 42


def test_ctrl_c_hides_py4js_tracebacks_of_the_interrupted_call_and_its_closed_connection(
    caplog, capsys
):
    import logging

    from infra.runner import run_lesson

    def interrupted(argv):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            try:  # what py4j does next: close the connection, which breaks
                raise BrokenPipeError(32, "Broken pipe")
            except BrokenPipeError:
                logging.getLogger("py4j.clientserver").exception(
                    "Exception occurred while shutting down connection"
                )
            logging.exception("KeyboardInterrupt while sending command.")
            raise

    with pytest.raises(SystemExit) as stopped:
        run_lesson(interrupted)

    assert stopped.value.code == 130
    assert caplog.records == []
    assert "Stopped with Ctrl-C" in capsys.readouterr().err
    # Without a Ctrl-C the same failure is a real one, and it is logged.
    try:
        raise BrokenPipeError(32, "Broken pipe")
    except BrokenPipeError:
        logging.getLogger("py4j.clientserver").exception(
            "Exception occurred while shutting down connection"
        )
    assert [record.exc_info[0] for record in caplog.records] == [BrokenPipeError]


def test_ctrl_c_in_the_run_loop_is_raised_between_calls_and_the_query_still_stops(spark, tmp_path):
    import signal

    write_files(tmp_path / "in", 3)
    query = memory_query(spark, tmp_path / "in", "interrupted", tmp_path / "cp")
    handler_before, presses = signal.getsignal(signal.SIGINT), []

    def press_ctrl_c() -> (
        None
    ):  # the run loop's callback: Ctrl-C lands here, as it would inside a JVM call
        presses.append("pressed")
        signal.raise_signal(signal.SIGINT)
        presses.append(
            "went on"
        )  # the plain handler would have raised KeyboardInterrupt on the line above

    with pytest.raises(KeyboardInterrupt):
        run_queries([query], Namespace(duration=600), every=press_ctrl_c, every_seconds=0)

    assert presses == ["pressed", "went on"]  # raised at the loop's next check, once
    assert not query.isActive and query.exception() is None  # stopped cleanly, not failed
    assert signal.getsignal(signal.SIGINT) is handler_before  # the handler is given back


def test_a_second_ctrl_c_does_not_wait_for_the_next_check():
    import signal
    import threading

    from infra.runner import ctrl_c_between_calls

    with ctrl_c_between_calls() as check:
        check()  # nothing pressed yet
        signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            check()
    # Outside the main thread there is no handler to install: the check never raises.
    checks = []
    worker = threading.Thread(target=lambda: checks.append(ctrl_c_between_calls().__enter__()()))
    worker.start()
    worker.join()
    assert checks == [None]
