"""teaching.narration: what a lesson prints, paragraph by paragraph and table by table."""

from __future__ import annotations

from teaching.narration import first_line, say, table_printer


def test_say_wraps_a_triple_quoted_paragraph(capsys):
    say("""one two
        three""")

    assert capsys.readouterr().out == "one two three\n"


def test_first_line_cuts_long_messages():
    assert first_line(ValueError("short\nsecond line")) == "short"
    assert first_line("x" * 200, width=10) == "xxxxxxx..."


def test_table_printer_heads_each_batch_with_its_label_and_sorts_every_column(spark, capsys):
    batch = spark.createDataFrame(
        [("games", 2), ("books", 9), ("books", 1)], "category STRING, orders INT"
    )

    table_printer("update")(batch, 7)

    assert capsys.readouterr().out == (
        "--- update · batch 7 ---\n"
        "+--------+------+\n"
        "|category|orders|\n"
        "+--------+------+\n"
        "|books   |1     |\n"
        "|books   |9     |\n"
        "|games   |2     |\n"
        "+--------+------+\n\n"
    )
