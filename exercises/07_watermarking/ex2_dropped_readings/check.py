"""07.2: the learner predicts which readings a watermarked windowed count drops.

The scenario is the pristine file's SCENARIO (the learner reads it there). The query runs in
update mode, so a reading that gets in shows up in the reading_ids of a row sent by the batch
it arrived in; ``dropped_ids`` turns the run into the ids, batch by batch, that never did.
Each mistake is another rule for "too late", worked out here from the scenario: a prediction
that is exactly a wrong rule's answer (where it differs from Spark's) names it. (Batch by
batch, the rules agree too often to tell them apart.)
"""

from common.schemas import SENSOR_SCHEMA
from practice import catalog
from practice.scenarios import reading, seconds
from practice.spec import Exercise, Mistake, Scenario

PRISTINE = catalog.load_module(
    catalog.EXERCISES_DIR / "07_watermarking" / "ex2_dropped_readings" / catalog.STUB, "pristine"
)
WINDOW = PRISTINE.WINDOW_SECONDS
DELAY = PRISTINE.LATENESS_SECONDS


def to_readings(scenario: list) -> list:
    """(reading_id, 'HH:MM:SS') pairs as SENSOR-0's readings, batch by batch."""
    return [
        [reading(reading_id, "SENSOR-0", time) for reading_id, time in batch] for batch in scenario
    ]


def dropped_ids(observation) -> list:
    """Per batch of the scenario, the ids of its readings that no row the batch sent holds (the
    last column: reading_ids). The last batch, with no input, is left out."""
    dropped = []
    for batch, arrived in zip(observation.batches, PRISTINE.SCENARIO, strict=False):
        counted = {reading_id for row in batch.rows for reading_id in row[-1]}
        dropped.append(sorted(reading_id for reading_id, _ in arrived if reading_id not in counted))
    return dropped


def watermarks() -> list:
    """Each batch's own watermark in seconds (latest event time of the batches before it minus
    the delay), None before the first; and the latest event time including the batch."""
    latest = None
    marks = []
    for batch in PRISTINE.SCENARIO:
        own = None if latest is None else latest - DELAY
        latest = max(
            [seconds(time) for _, time in batch] + ([latest] if latest is not None else [])
        )
        marks.append((own, latest))
    return marks


def dropped_by(rule) -> list:
    """Per batch, the ids a rule(event second, window end, own watermark, previous watermark,
    latest event time including the batch) calls too late."""
    marks = watermarks()
    dropped = []
    for number, batch in enumerate(PRISTINE.SCENARIO):
        own, latest = marks[number]
        previous = marks[number - 1][0] if number else None
        late = []
        for reading_id, time in batch:
            second = seconds(time)
            window_end = second - second % WINDOW + WINDOW
            if rule(second, window_end, own, previous, latest):
                late.append(reading_id)
        dropped.append(sorted(late))
    return dropped


def by_event_time(second, window_end, own, previous, latest) -> bool:
    """Older than the previous batch's watermark, whatever its window."""
    return previous is not None and second < previous


def by_own_watermark(second, window_end, own, previous, latest) -> bool:
    """Its window ended at or before the batch's own watermark."""
    return own is not None and window_end <= own


def by_latest_in_batch(second, window_end, own, previous, latest) -> bool:
    """More than the delay behind the latest event, counting the batch's own readings."""
    return second < latest - DELAY


def follows(rule):
    def when(guess, actual):
        wrong = dropped_by(rule)
        return guess == wrong and wrong != actual

    return when


EXERCISE = Exercise(
    title="Which readings are too late?",
    kind="predict",
    practises="which rows a watermark drops: the previous batch's watermark against window ends",
    function="build_window_counts",
    schemas=SENSOR_SCHEMA,
    output_mode="update",
    predicted=dropped_ids,
    check_dropped=True,
    mirrors="07_watermarking:build_window_counts",
    why=(
        "A micro-batch runs with two watermarks: its own, set from the batches before it, "
        "closes windows; the previous batch's drops late rows. So a reading in batch N is "
        "judged by the latest event time of batches 0 to N-2, and it is dropped only when its "
        "window ended at or before that watermark: r7 (10:30:16) is behind 10:30:17 yet its "
        "window [10:30:10, 10:30:20) is still open, so it counts, while r8's window had ended. "
        "A dropped row is in no window and shows only in numRowsDroppedByWatermark."
    ),
    hints=[
        "A micro-batch runs with two watermarks: its own, computed after the batch before it, and "
        "the one of the batch before. Which of them decides that a reading is too late? And is it "
        "the reading's own time, or the end of its window, that is compared with it?",
        "lesson 07, `SCENARIO`: the docstring's 'What you'll see' table gives, for each batch, "
        "the watermark that drops late rows and the one that closes windows; lesson 07, `main` "
        "explains why r9@13 gets in while r8@09 is dropped.",
        "A method: write down the latest event time after each batch. Batch N's own watermark is "
        "the latest time after batch N-1 minus 10 s (none for batch 0); it drops late readings "
        "with batch N-1's own watermark (none for batches 0 and 1). For each reading of batch N, "
        "find its 10 s window: it is dropped if that window's end is at or before the dropping "
        "watermark. A batch's own readings never move the watermarks it runs with.",
    ],
    # A predict exercise needs no hidden scenario: the query and its input are in the file.
    scenarios=[Scenario(to_readings(PRISTINE.SCENARIO))],
    mistakes=[
        Mistake(
            "event_time_not_window",
            "You dropped readings whose event time is behind the watermark. Spark drops a "
            "reading only when its window has ended at or before the watermark; an older "
            "reading whose window is still open gets in.",
            when=follows(by_event_time),
        ),
        Mistake(
            "own_watermark",
            "You dropped with each batch's own watermark. That one closes windows; late "
            "readings are dropped with the previous batch's watermark, which is older.",
            when=follows(by_own_watermark),
        ),
        Mistake(
            "watermark_moves_within_batch",
            "You moved the watermark with the readings of the same batch. The watermark only "
            "moves between micro-batches: a batch never drops a reading because of a later "
            "event time that arrived with it.",
            when=follows(by_latest_in_batch),
        ),
    ],
)
