from practice import survive
from practice.scenarios import at
from practice.spec import Exercise, Mistake, Scenario

SCHEMA = "record_id STRING, user_id STRING, amount DOUBLE, event_time TIMESTAMP"


def record(record_id: str, user: str, amount: float, time_of_day: str) -> dict:
    return {
        "record_id": record_id,
        "user_id": user,
        "amount": amount,
        "event_time": at(time_of_day),
    }


EXERCISE = Exercise(
    title="A sink that survives kill -9",
    kind="survive",
    practises="an idempotent foreachBatch sink: a replayed batch id changes nothing",
    schemas=SCHEMA,
    run=survive.run,
    check_dropped=False,
    why=(
        "Exactly once after a crash takes three parts: a replayable source, offsets logged in "
        "the checkpoint before a batch runs, and a sink for which writing a batch id twice "
        "leaves what writing it once leaves. Spark gives the first two, so after a kill between "
        "your write and its commit it runs the same batch id again with the same rows. A folder "
        "per batch id written with mode('overwrite') makes that replay replace whatever the "
        "killed run left there, whole or partial, and touch no other batch's rows."
    ),
    hints=[
        "After a kill between your sink and Spark's commit, the same batch id runs again with the "
        "same rows. What would make writing batch N a second time leave exactly what writing it "
        "once left? And if your sink makes two writes, what if the kill lands between them?",
        "lesson 16, `write_events`: its Delta write carries the query's id and the batch id in "
        "the same commit as the data, so a replayed batch id is skipped; the plain JSON append "
        "beside it shows what happens without that.",
        "lesson 16, `write_events`: one Delta append under target with txnAppId "
        "(query_id(batch_df), from common.batch_ids: the same after a restart) and txnVersion "
        "(the batch id), and nothing else. Another right route: a folder of the batch's own under "
        "target, overwritten on each write. A guard kept in Python memory dies with the process.",
    ],
    scenarios=[
        # Three micro-batches; one kill after the sink wrote batch 1, before its commit, one
        # inside the sink of batch 2 (survive.KILLS).
        Scenario(
            [
                [record("R-1", "U-1", 10.0, "10:00:00"), record("R-2", "U-2", 20.0, "10:00:05")],
                [record("R-3", "U-1", 30.0, "10:00:10"), record("R-4", "U-3", 40.0, "10:00:12")],
                [record("R-5", "U-2", 50.0, "10:00:20")],
            ]
        ),
        Scenario(
            [
                [record("X-7", "A", 1.5, "09:00:00")],
                [record("X-3", "B", 2.5, "09:00:01"), record("X-9", "A", 3.5, "09:00:02")],
                [record("X-1", "C", 4.5, "09:00:03"), record("X-2", "C", 5.5, "09:00:09")],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "ignores_batch_id",
            "The batch Spark ran again after the kill that followed your sink was written a "
            "second time: its rows were added again instead of replacing the first attempt's. "
            "A replay brings the same batch id: a write keyed by it (a folder of its own, "
            "overwritten) changes nothing the second time. A guard kept in Python memory (a set "
            "of the batch ids written) is gone in the restarted process.",
            when=survive.damage_at("after-sink", "duplicated"),
        ),
        Mistake(
            "data_then_marker",
            "Your sink survives a kill after it returns, but not one between two of its writes: "
            "killed there, its batch was written twice after the restart. The first write "
            "happened, what said so did not, and the replay wrote it again. Make the write that "
            "holds the data the one that says it is done: overwrite a folder of the batch's own, "
            "or Delta with txnAppId and txnVersion (the commit holds both).",
            when=survive.damage_at("after-write", "duplicated"),
        ),
        Mistake(
            "marker_then_data",
            "Rows were lost after a kill between two of your sink's writes: the restart took "
            "the batch as done, but its data had not been written. Whatever says a batch is done "
            "must come with its data, never before it.",
            when=survive.damage_at("after-write", "lost"),
        ),
    ],
)
