import json

from pyspark.sql.types import StringType, StructField, StructType

from practice.scenarios import transaction
from practice.spec import Exercise, Mistake, Scenario

# What the text source gives: one string column, the line.
LINE_SCHEMA = StructType([StructField("value", StringType())])


def line(text: str) -> dict:
    """One raw line, as the text source would read it."""
    return {"value": text}


def payment(transaction_id: str, amount=25.0, /, *, without: tuple = (), **changes) -> dict:
    """A transaction written as a JSON line; ``without`` leaves fields out, ``changes`` sets
    them to other values (of any JSON type)."""
    record = transaction(transaction_id, "USER-1", 0.0, "10:30:00") | {"amount": amount}
    record |= changes
    for name in without:
        del record[name]
    return line(json.dumps(record, separators=(",", ":")))


def rows_by_line(observation) -> dict:
    """{line: its quarantine_reason}, over every micro-batch."""
    return {row[0]: row[-1] for batch in observation.batches for row in batch.rows}


def drops_bad_lines(mine, wanted):
    """Fewer rows than lines: the bad lines were filtered out instead of given a reason."""
    return len(rows_by_line(mine)) < len(rows_by_line(wanted))


def wrong_type_is_missing(mine, wanted):
    """A value of the wrong type was called missing."""
    reasons = rows_by_line(mine)
    return any(
        " is not " in str(reason) and str(reasons.get(text)).startswith("missing")
        for text, reason in rows_by_line(wanted).items()
    )


def missing_field_passes(mine, wanted):
    """A line with a missing required field came out as good."""
    reasons = rows_by_line(mine)
    return any(
        str(reason).startswith("missing") and text in reasons and reasons[text] is None
        for text, reason in rows_by_line(wanted).items()
    )


EXERCISE = Exercise(
    title="Parse and quarantine",
    kind="build",
    practises="parse text lines with from_json and give every bad line a reason, never drop it",
    function="parse_transactions",
    schemas=LINE_SCHEMA,
    check_watermark=False,  # not an exercise about watermarks: a harmless one is no failure
    output_mode="append",
    mirrors="03_file_streaming:parse_transactions",
    why=(
        "from_json never fails the query: a value that does not fit the schema becomes null. "
        "Nulls alone cannot say why, so the line is parsed a second time with every field as "
        "text: null there means absent, text there but null in the typed parse means the wrong "
        "type. A chain of F.when gives the first reason that applies, and since nothing is "
        "filtered, every line comes out, so a bad line can be kept in a quarantine instead of "
        "being lost or stopping the stream."
    ),
    hints=[
        "Parsing a line with the schema's types gives null both for a field the line lacks and "
        "for a value of the wrong type ('abc' for the amount). What second look at the same line "
        "would tell those two apart? And what must be true of a line before any of its fields can "
        "be looked at?",
        "lesson 03, `parse_transactions`: the line is parsed twice, once with the schema's types "
        "and once keeping each field's value as the line gives it; lesson 03, `quarantine_reason` "
        "then gives the first reason that applies, in a chain of when()s: the line first, then "
        "field by field in the schema's order.",
        "lesson 03, `absent` and `unreadable`: a field is missing when the second parse has "
        "nothing there (or blank text), and of the wrong type when the second parse has it but "
        "the typed one is null. Here a second parse with every field as StringType is enough (the "
        "lesson's VARIANT also tells JSON types apart); F.json_object_keys is null unless the "
        "line starts with a JSON object.",
    ],
    scenarios=[
        # Batch 0: plain text, a line without user_id. Batch 1: T3 has no category (optional,
        # good), T4's amount is text, T5's negative. Batch 2: T6's user_id is blank.
        Scenario(
            [
                [
                    payment("T1", 12.5),
                    line("this is not json"),
                    payment("T2", 40.0, without=("user_id",)),
                ],
                [
                    payment("T3", 7.0, without=("category",)),
                    payment("T4", "abc"),
                    payment("T5", -5.0),
                ],
                [payment("T6", 30.0, user_id="   "), payment("T7", 99.99, category="toys")],
            ]
        ),
        # Other kinds: an empty line, a JSON null amount, a cut-off line; a timestamp that is
        # not one, and none at all; a blank transaction_id, an amount in quotes; 0.0 is good,
        # -0.5 is below 0, and 500 (an integer in the JSON text) is a number.
        Scenario(
            [
                [
                    line("   "),
                    payment("P-1", None),
                    line('{"transaction_id":"P-2","user_id":"USER-4","amo'),
                ],
                [
                    payment("P-3", 15.0, timestamp="yesterday"),
                    payment("P-4", 16.0, without=("timestamp",)),
                    payment("P-5", 17.0),
                ],
                [
                    payment("P-6", 18.0, transaction_id=""),
                    payment("P-7", "12.5"),
                    payment("P-8", 0.0),
                    payment("P-9", -0.5),
                    payment("P-10", 500),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "drops_bad_lines",
            "Some lines are gone: the bad lines were filtered out. A bad line is never dropped: "
            "it stays, with its quarantine_reason, so the quarantine can keep and count it.",
            when=drops_bad_lines,
        ),
        Mistake(
            "wrong_type_is_missing",
            "A value of the wrong type is called missing: from_json turns 'abc' into null, so "
            "the typed record alone cannot tell 'absent' from 'not a number'. Parse the line "
            "a second time with every field as text: there the value is present.",
            when=wrong_type_is_missing,
        ),
        Mistake(
            "missing_field_passes",
            "A line with a required field missing came out as good: absent, JSON null and blank "
            "('   ') are all missing. Test the field's text with F.trim(...) == '' as well as "
            "isNull().",
            when=missing_field_passes,
        ),
    ],
)
