"""06.3: the learner predicts what a tumbling-window count sends in update mode.

The scenario is the pristine file's SCENARIO (the learner reads it there). Each mistake is
another model of update mode, worked out here: a batch of the prediction that matches a wrong
model, where that model differs from Spark, names it.
"""

import datetime as dt

from common.schemas import SENSOR_SCHEMA
from practice import catalog
from practice.observe import sort_rows
from practice.scenarios import reading
from practice.spec import Exercise, Mistake, Scenario

PRISTINE = catalog.load_module(
    catalog.EXERCISES_DIR / "06_windowing" / "ex3_early_reading" / catalog.STUB, "pristine"
)
WINDOW_SECONDS = 10


def to_readings(scenario: list) -> list:
    """(reading_id, 'HH:MM:SS') pairs as SENSOR-0's readings, batch by batch."""
    return [
        [reading(reading_id, "SENSOR-0", time) for reading_id, time in batch] for batch in scenario
    ]


def matches_wrong_model(guess, actual, model: list) -> bool:
    """Some batch of the prediction is the wrong model's, where that model is not Spark's."""
    if not isinstance(guess, list):
        return False
    return any(
        number < len(guess) and guess[number] == wrong and wrong != actual[number]
        for number, wrong in enumerate(model)
    )


def as_complete_mode(actual: list) -> list:
    """Every window seen so far, with its latest count, in every batch."""
    latest = {}
    model = []
    for rows in actual:
        latest.update({row[:2]: row[2] for row in rows})
        model.append(sort_rows([(*window, count) for window, count in latest.items()]))
    return model


def as_increments(actual: list) -> list:
    """Each changed window with the count of the batch's new readings only."""
    latest = {}
    model = []
    for rows in actual:
        model.append(sort_rows([(*row[:2], row[2] - latest.get(row[:2], 0)) for row in rows]))
        latest.update({row[:2]: row[2] for row in rows})
    return model


def as_end_inclusive() -> list:
    """Update mode if a window held its end and not its start: (10:30:10, 10:30:20]."""
    counts = {}
    model = []
    for batch in PRISTINE.SCENARIO:
        changed = set()
        for _, time in batch:
            taken = dt.datetime.strptime(time, "%H:%M:%S")
            start = taken - dt.timedelta(seconds=(taken.second - 1) % WINDOW_SECONDS + 1)
            end = start + dt.timedelta(seconds=WINDOW_SECONDS)
            window = (start.strftime("%H:%M:%S"), end.strftime("%H:%M:%S"))
            counts[window] = counts.get(window, 0) + 1
            changed.add(window)
        model.append(sort_rows([(*window, counts[window]) for window in changed]))
    return model


def thinks_complete_mode(guess, actual):
    return matches_wrong_model(guess, actual, as_complete_mode(actual))


def thinks_only_new_readings(guess, actual):
    return matches_wrong_model(guess, actual, as_increments(actual))


def thinks_end_inclusive(guess, actual):
    return matches_wrong_model(guess, actual, as_end_inclusive())


EXERCISE = Exercise(
    title="A reading that arrives late",
    kind="predict",
    practises="tumbling windows on event time in update mode: changed windows, with their totals",
    function="build_tumbling_counts",
    schemas=SENSOR_SCHEMA,
    output_mode="update",
    why=(
        "A row's window depends on its event time alone: r5, taken at 10:30:04, belongs to "
        "[10:30:00, 10:30:10) whichever batch brings it, and without a watermark every window "
        "stays open for it. Update mode sends, in each batch, only the windows that batch "
        "changed, each with its total so far from the state, so an untouched window is not "
        "sent again. A window includes its start and excludes its end: a reading at exactly "
        "10:30:20 belongs to the window that starts there."
    ),
    hints=[
        "In update mode, which windows does a micro-batch send: all of them, or only the ones its "
        "readings changed, and with which count? Does a reading that arrives late count in the "
        "window of the time it was taken, or of the time it arrived?",
        "lesson 06, `main`, part 1 (tumbling windows, update mode): in batch 1, r8 and r9 change "
        "the 10:30:00 window although they arrive late; the docstring's 'What you'll see' shows "
        "that window sent again with its new count. lesson 06, `build_tumbling_windows`: the "
        "window comes from event_time alone, its start included and its end excluded.",
        "A method: keep a table of windows and their counts. For each batch, put each reading in "
        "the 10 s window that holds its time (start included, end excluded) and add 1 to that "
        "window; then write down only the windows this batch added to, each with its count so "
        "far.",
    ],
    # A predict exercise needs no hidden scenario: the query and its input are in the file.
    scenarios=[Scenario(to_readings(PRISTINE.SCENARIO))],
    mistakes=[
        Mistake(
            "complete_mode",
            "That is complete mode: it resends every window each batch. Update mode sends only "
            "the windows the batch changed; a window no new reading fell into is not sent again.",
            when=thinks_complete_mode,
        ),
        Mistake(
            "only_new_readings",
            "Those counts are the batch's new readings only. Update mode sends a changed "
            "window's whole state: its total so far, counting the readings of earlier batches.",
            when=thinks_only_new_readings,
        ),
        Mistake(
            "window_boundary",
            "A reading exactly on a boundary belongs to the window that starts there: windows "
            "include their start and exclude their end, so 10:30:20 is in [10:30:20, 10:30:30).",
            when=thinks_end_inclusive,
        ),
    ],
)
