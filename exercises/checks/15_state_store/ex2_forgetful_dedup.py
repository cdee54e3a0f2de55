from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.scenarios import shop_event
from practice.spec import Exercise, Mistake, Scenario


def event_ids(observation) -> list:
    """Every event_id the query emitted, in all batches."""
    position = observation.columns.index("event_id") if "event_id" in observation.columns else 0
    return [row[position] for batch in observation.batches for row in batch.rows]


def lets_resends_through(mine, wanted):
    """Some event_id came out twice: the key holds more than the id."""
    ids = event_ids(mine)
    return len(ids) > len(set(ids))


def has_no_watermark(mine, wanted):
    return all(batch.watermark is None for batch in mine.batches)


def keeps_every_id(mine, wanted):
    """The right rows, but more ids kept in state than the watermark allows."""
    same_rows = [batch.rows for batch in mine.batches] == [batch.rows for batch in wanted.batches]
    return same_rows and (mine.state_rows or 0) > (wanted.state_rows or 0)


EXERCISE = Exercise(
    title="Each event once",
    kind="build",
    practises="dropDuplicatesWithinWatermark: each event once, its id forgotten after the delay",
    function="build_dedup_within_watermark",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    output_mode="append",
    check_state=True,
    mirrors="15_state_store:build_dedup_within_watermark",
    hints=[
        "Deduplication is stateful: Spark keeps every event_id it has let through, to recognise "
        "a copy. It can forget an id only with a watermark, and the key must be the id alone: "
        "a retry with a later timestamp is the same event, so it must match the first copy.",
        "events.withWatermark('timestamp', DEDUP_DELAY) first, then "
        ".dropDuplicatesWithinWatermark([...]) with the one column that names an event.",
        "return events.withWatermark('timestamp', DEDUP_DELAY)"
        ".dropDuplicatesWithinWatermark(['event_id'])",
    ],
    scenarios=[
        # E1 twice in batch 0 (an exact copy); retries of E1 and E2 with later timestamps in
        # batch 1, of E3 in batch 2. Batch 3 brings E1 once more: its watermark (10:30:40) is
        # past E1's time + 30 s, but ids are forgotten at the end of a batch, so this copy is
        # still caught; then E1 and E2 go. A trailing batch with no data (watermark 10:30:50)
        # forgets E3: E4 and E5 are left in state.
        Scenario(
            [
                [
                    shop_event("E1", "U1", "view", "10:30:00"),
                    shop_event("E2", "U2", "cart", "10:30:05"),
                    shop_event("E1", "U1", "view", "10:30:00"),
                ],
                [
                    shop_event("E1", "U1", "view", "10:30:03"),
                    shop_event("E3", "U1", "purchase", "10:30:20", price=25.0),
                    shop_event("E2", "U2", "cart", "10:30:09"),
                ],
                [
                    shop_event("E4", "U2", "view", "10:31:10"),
                    shop_event("E3", "U1", "purchase", "10:30:25", price=25.0),
                ],
                [
                    shop_event("E5", "U1", "view", "10:31:20"),
                    shop_event("E1", "U1", "view", "10:30:03"),
                ],
            ]
        ),
        # Other ids and users; a retry of A-8 comes two batches after its first copy; A-7's and
        # A-9's last retries come in the batch whose end forgets them (still caught).
        Scenario(
            [
                [
                    shop_event("A-7", "U9", "cart", "11:00:10", product="P004"),
                    shop_event("A-8", "U5", "view", "11:00:12"),
                ],
                [
                    shop_event("A-9", "U5", "purchase", "11:00:30", price=12.5, quantity=2),
                    shop_event("A-7", "U9", "cart", "11:00:14", product="P004"),
                ],
                [
                    shop_event("A-10", "U9", "view", "11:01:30"),
                    shop_event("A-8", "U5", "view", "11:00:17"),
                ],
                [
                    shop_event("A-7", "U9", "cart", "11:00:20", product="P004"),
                    shop_event("A-9", "U5", "purchase", "11:00:35", price=12.5, quantity=2),
                    shop_event("A-11", "U5", "view", "11:01:31"),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "all_columns",
            "Deduplicating on all the columns (or on event_id and the timestamp): a retry with a "
            "later timestamp is another row, so it gets through. Deduplicate on ['event_id'] "
            "alone.",
            when=lets_resends_through,
        ),
        Mistake(
            "no_watermark",
            "dropDuplicates without a watermark: each event is let through once, but Spark "
            "remembers every event_id for ever, so the state only grows (compare the state "
            "rows). Add withWatermark('timestamp', DEDUP_DELAY) and deduplicate within it.",
            when=has_no_watermark,
        ),
        Mistake(
            "ids_kept_forever",
            "The right rows, but more ids left in state than expected: ids are kept too long. "
            "dropDuplicates(['event_id']) keeps every id for ever, even after a watermark: it "
            "forgets a key only when the key holds the event-time column, and event_id alone "
            "does not. dropDuplicatesWithinWatermark forgets an id once the watermark passes "
            "its time + the watermark's delay, so that delay must be DEDUP_DELAY, no longer "
            "(compare the watermarks).",
            when=keeps_every_id,
        ),
    ],
)
