"""Every lesson reads as its streaming query: short, mostly query code, machinery in common/.

"Query code" is the body of the functions that read a source, build a DataFrame or start
a sink (``read_*``, ``build_*``, ``start_*``, ``parse_*``, ``to_*``, ``write_*``,
``enrich*``); the rest is main(), narration and constants. Docstrings, comments and
blank lines count for neither.

A lesson that runs a declarative pipeline (``PIPELINE = "<folder>"``, lesson 18) keeps its
queries out of the lesson file: they are the table definitions under
streaming_tutorial/pipelines/<folder>/transformations, which spark-pipelines reads and runs.
Their code lines (``.py`` as above; ``.sql`` without blank and ``--`` comment lines) count as
the lesson's query code: every one of them declares a table. Such a lesson's file is also
the operator's side, which a pipeline's whole point is to keep apart from the queries: it runs
dry-run, run and an incremental run and reads the results. So its bar is a third, not a half.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

from conftest import ROOT

MAX_LINES = 250
MIN_QUERY_SHARE = 0.5
MIN_QUERY_SHARE_WITH_PIPELINE = 1 / 3  # see the module docstring
QUERY_PREFIXES = ("read_", "build_", "start_", "parse_", "to_", "write_", "enrich")
LESSONS = sorted((ROOT / "streaming_tutorial").glob("[0-9][0-9]_*.py"))
SHAPED = [path for path in LESSONS if "01" <= path.name[:2] <= "18"]
PIPELINES = ROOT / "streaming_tutorial" / "pipelines"


def code_lines(source: str) -> set[int]:
    """Line numbers that hold code: not blank, not only a comment, not inside a docstring, and
    not only the continuation of a multi-line string (a narration paragraph is prose, not code)."""
    tree = ast.parse(source)
    docstring_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                docstring_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            lines.add(token.start[0])
    return lines - docstring_lines


def sql_code_lines(source: str) -> int:
    return sum(
        1 for line in source.splitlines() if line.strip() and not line.strip().startswith("--")
    )


def pipeline_definitions(source: str, pipelines: Path = PIPELINES) -> list[Path]:
    """The table definitions of the pipeline a lesson runs (its ``PIPELINE = "<folder>"``), or none."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and [
            getattr(target, "id", None) for target in node.targets
        ] == ["PIPELINE"]:
            folder = pipelines / node.value.value / "transformations"
            return sorted(path for path in folder.rglob("*") if path.suffix in (".py", ".sql"))
    return []


def query_share(path: Path, pipelines: Path = PIPELINES) -> float:
    source = path.read_text(encoding="utf-8")
    code = code_lines(source)
    query: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith(QUERY_PREFIXES):
            query.update(range(node.lineno, node.end_lineno + 1))
    definitions = sum(
        len(code_lines(text)) if definition.suffix == ".py" else sql_code_lines(text)
        for definition in pipeline_definitions(source, pipelines)
        for text in [definition.read_text(encoding="utf-8")]
    )
    return (len(code & query) + definitions) / max(len(code) + definitions, 1)


@pytest.mark.parametrize("lesson", SHAPED, ids=lambda path: path.stem)
def test_a_lesson_fits_on_a_few_screens(lesson):
    lines = len(lesson.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{lesson.name} has {lines} lines; move machinery to common/"


@pytest.mark.parametrize("lesson", SHAPED, ids=lambda path: path.stem)
def test_a_lesson_is_mostly_its_query(lesson):
    share = query_share(lesson)
    bar = (
        MIN_QUERY_SHARE_WITH_PIPELINE
        if pipeline_definitions(lesson.read_text(encoding="utf-8"))
        else MIN_QUERY_SHARE
    )
    assert share >= bar, f"{lesson.name}: only {share:.0%} of its code builds or starts queries"


def test_the_measure_tells_query_code_from_machinery(tmp_path):
    lesson = tmp_path / "99_example.py"
    lesson.write_text(
        '"""Doc.\n\nmore doc\n"""\nX = 1\n\n\ndef build_x(df):\n    """Doc."""\n'
        '    # why\n    return df.select("x")\n\n\ndef main():\n    say("""a long\n    paragraph\n'
        '    of prose""")\n    print(2)\n'
    )
    # Code lines: X = 1, def build_x, return, def main, say(, the ")" after the prose, print(2);
    # query code: def build_x and its return.
    assert query_share(lesson) == pytest.approx(2 / 7)


def test_a_pipeline_lessons_table_definitions_count_as_its_query_code(tmp_path):
    lesson = tmp_path / "99_example.py"
    lesson.write_text('PIPELINE = "demo"\n\n\ndef main():\n    print(1)\n')
    definitions = tmp_path / "demo" / "transformations"
    definitions.mkdir(parents=True)
    (definitions / "bronze.py").write_text(
        '"""Doc."""\nX = 1\n\n\ndef bronze():\n    # why\n    return X\n'
    )
    (definitions / "gold.sql").write_text(
        "-- a comment\nCREATE MATERIALIZED VIEW gold\n\nAS SELECT 1;\n"
    )
    (definitions / "notes.txt").write_text("not a definition\n")
    # The lesson's code: PIPELINE, def main, print(1), none of it query code; the definitions'
    # code: X = 1, def bronze, return X, and two SQL lines, all of it query code.
    assert query_share(lesson, pipelines=tmp_path) == pytest.approx(5 / 8)
    assert (
        query_share(lesson, pipelines=tmp_path / "elsewhere") == 0
    )  # no definitions there: none counted
