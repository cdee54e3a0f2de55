"""teaching.state_reader: state rows shown as text, the metadata and change feed summed up.

(session_conf moved with the rest of lesson 15's demo machinery to lesson15_state_demos.py;
its test is in tests/lessons/test_15_state_store.py.)
"""

from __future__ import annotations

import json
from datetime import datetime

from pyspark.sql import Row

from teaching import state_reader


def test_a_state_cell_reads_as_text():
    assert state_reader.as_text(Row(user_id="U1")) == "U1"  # a key of one column: just its value
    assert (
        state_reader.as_text(Row(events=2, spent=15.0, last_seen=datetime(2025, 1, 15, 10, 33)))
        == "2, 15.0, 10:33:00"
    )
    assert state_reader.as_text(Row(count=1, buf=bytearray(b"\x00" * 40))) == "1, <40 bytes>"
    assert state_reader.as_text(None) == "null"


def test_rows_are_sorted_by_key_and_keep_their_order_within_a_key():
    rows = [
        Row(key=Row(user_id="U2"), list_element=Row(event_type="view")),
        Row(key=Row(user_id="U1"), list_element=Row(event_type="view")),
        Row(key=Row(user_id="U1"), list_element=Row(event_type="cart")),
    ]

    assert state_reader.text_rows(rows, ["key", "list_element"]) == [
        ("U1", "view"),
        ("U1", "cart"),
        ("U2", "view"),
    ]


class FakeFrame:
    """What the printers use of a DataFrame: collect(), columns, orderBy()."""

    def __init__(self, rows):
        self.rows = rows
        self.columns = list(rows[0].asDict()) if rows else []

    def collect(self):
        return self.rows

    def orderBy(self, *columns):
        return self


def test_metadata_rows_name_each_operator_and_its_state_variables():
    properties = {
        "timeMode": "EventTime",
        "stateVariables": [
            {"stateName": "session", "stateVariableType": "ValueState", "ttlEnabled": False},
            {"stateName": "recent", "stateVariableType": "ListState", "ttlEnabled": True},
        ],
    }
    frame = FakeFrame(
        [
            Row(
                operatorId=0,
                operatorName="transformWithStateInPySparkExec",
                stateStoreName="default",
                numPartitions=2,
                minBatchId=0,
                maxBatchId=3,
                operatorProperties=json.dumps(properties),
            ),
            Row(
                operatorId=1,
                operatorName="stateStoreSave",
                stateStoreName="default",
                numPartitions=2,
                minBatchId=0,
                maxBatchId=3,
                operatorProperties=None,
            ),
        ]
    )

    assert state_reader.metadata_rows(frame) == [
        (
            0,
            "transformWithStateInPySparkExec",
            "default",
            2,
            "0-3",
            "session (ValueState), recent (ListState, TTL)",
        ),
        (1, "stateStoreSave", "default", 2, "0-3", "-"),
    ]


def test_a_change_feed_is_summed_up_per_batch():
    frame = FakeFrame(
        [
            Row(batch_id=2, change_type="delete", key=Row(user_id="U2"), value=None),
            Row(batch_id=0, change_type="update", key=Row(user_id="U2"), value=Row(n=1)),
            Row(batch_id=0, change_type="update", key=Row(user_id="U1"), value=Row(n=1)),
            Row(batch_id=2, change_type="update", key=Row(user_id="U3"), value=Row(n=2)),
        ]
    )

    assert state_reader.change_rows(frame) == [(0, "U1 U2", "-"), (2, "U3", "U2")]


def test_print_rows_shows_the_first_rows_and_counts_the_rest(capsys):
    frame = FakeFrame(
        [Row(key=Row(user_id=f"U{n}"), value=Row(events=n), partition_id=0) for n in range(3)]
    )

    shown = state_reader.print_rows("stateVarName=session", frame, limit=2)

    assert shown == [("U0", "0"), ("U1", "1"), ("U2", "2")]
    assert capsys.readouterr().out == (
        "stateVarName=session: 3 rows\n  key         value\n  U0          0\n"
        "  U1          1\n  ... 1 more\n"
    )
