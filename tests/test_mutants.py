"""The mutants of the exercises' reference solutions (tools/mutants.py, docs/MUTANTS.md).

The mutator's own tests (no Spark, in the default suite): which mutants each operator makes,
that their names stay when lines move, that every mutant is the solution with one change,
and that exercises/equivalent_mutants.json lists only mutants that still exist.

The mutants lane (``-m mutants``): every mutant of every reference solution is checked as a
learner's file would be, and the check must not pass it, unless it is listed as equivalent (then
it must pass). ``-m mutants_sample`` runs a fixed few per exercise. Both are slow lanes of their
own, a survive exercise's mutants included (its checks kill child processes, as the crash lane's
do).
"""

from __future__ import annotations

import ast

import pytest
from test_exercises import (
    kafka_for_the_check,  # noqa: F401  (autouse: a check that runs on Kafka gets the tests' broker)
    one_shuffle_partition,  # noqa: F401  (autouse: the checks' one partition)
)

from practice import catalog
from practice.checking import PASSED, check
from tools.mutants import (
    EQUIVALENT_FILE,
    diff,
    equivalent_mutants,
    exercise_mutants,
    mutants,
    sample,
    write_mutant,
)

EXERCISES = catalog.all_exercises()
MUTANTS = {exercise.id: exercise_mutants(exercise) for exercise in EXERCISES}
EQUIVALENT = equivalent_mutants()


def names(source: str, operator: str) -> list[str]:
    return [mutant.name for mutant in mutants(source) if mutant.operator == operator]


# --- The operators ---------------------------------------------------------------------------


def test_compare_flips_python_and_sql_comparisons():
    source = """
def f(df):
    x = a < b <= c
    return df.filter(F.col("n") > 1).where("a >= 2 AND b <> c").selectExpr("x == 1")
"""
    assert names(source, "compare") == [
        "compare in f: a < b <= c -> a <= b <= c",
        "compare in f: a < b <= c -> a < b < c",
        "compare in f: F.col('n') > 1 -> F.col('n') >= 1",
        "compare in f: 'a >= 2 AND b <> c' -> 'a > 2 AND b <> c'",
        "compare in f: 'a >= 2 AND b <> c' -> 'a >= 2 AND b = c'",
        "compare in f: 'x == 1' -> 'x != 1'",
    ]


def test_number_moves_numbers_and_durations_but_not_docstrings_indexes_or_ranges():
    source = '''
"""Waits 5 seconds, 3 times."""
import x
LIMIT = 500.0
DELAY = "1 minute and 10 seconds"
def f(row):
    """Waits 10 seconds."""
    return row[0] + range(3) + F.round(row.amount, 2) + f"{row.x:03d} 7 seconds"
'''
    assert names(source, "number") == [
        "number in LIMIT: 500.0 -> 501.0",
        "number in LIMIT: 500.0 -> 499.0",
        # "1 minute" never becomes "0 minute".
        "number in DELAY: '1 minute and 10 seconds' -> '2 minute and 10 seconds'",
        "number in DELAY: '1 minute and 10 seconds' -> '1 minute and 11 seconds'",
        "number in DELAY: '1 minute and 10 seconds' -> '1 minute and 9 seconds'",
        "number in f: F.round(row.amount, 2) -> F.round(row.amount, 3)",
        "number in f: F.round(row.amount, 2) -> F.round(row.amount, 1)",
    ]


def test_swap_exchanges_two_different_constants_of_one_kind():
    source = """
SIZE = "20 seconds"
STEP = "10 seconds"
SAME = "10 seconds"
def f(df):
    return F.window("t", SIZE, STEP), F.window("t", STEP, SAME), g(7, 3, 1.5, "a")
"""
    assert names(source, "swap") == [
        "swap in f: F.window('t', SIZE, STEP) -> F.window('t', STEP, SIZE)",
        "swap in f: g(7, 3, 1.5, 'a') -> g(3, 7, 1.5, 'a')",
    ]


def test_drop_key_leaves_out_a_key_or_one_side_of_a_condition():
    source = """
def f(a, b):
    on_time = (F.col("x") >= F.col("y")) & (F.col("x") <= F.col("z"))
    keyed = a.groupBy("k", "j").count().dropDuplicates(["id", "t"]).dropDuplicates(["id"])
    return keyed.join(b, same & on_time).join(b, ["id", "day"]).filter(F.col("p") & F.col("q"))
"""
    assert names(source, "drop-key") == [
        "drop-key in f: a.groupBy('k', 'j') -> a.groupBy('j')",
        "drop-key in f: a.groupBy('k', 'j') -> a.groupBy('k')",
        "drop-key in f: .dropDuplicates(['id', 't']) -> .dropDuplicates(['t'])",
        "drop-key in f: .dropDuplicates(['id', 't']) -> .dropDuplicates(['id'])",
        "drop-key in f: .join(b, ['id', 'day']) -> .join(b, ['day'])",
        "drop-key in f: .join(b, ['id', 'day']) -> .join(b, ['id'])",
        "drop-key in f: same & on_time -> same",
        "drop-key in f: same & on_time -> on_time",
        # on_time is the join condition's too: followed through its assignment.
        "drop-key in f: (F.col('x') >= F.col('y')) & (F.col('x') <= F.col('z')) "
        "-> F.col('x') >= F.col('y')",
        "drop-key in f: (F.col('x') >= F.col('y')) & (F.col('x') <= F.col('z')) "
        "-> F.col('x') <= F.col('z')",
        "drop-key in f: F.col('p') & F.col('q') -> F.col('p')",
        "drop-key in f: F.col('p') & F.col('q') -> F.col('q')",
    ]


def test_drop_call_removes_a_step_or_a_statement_that_forgets():
    source = """
from pyspark.sql import Window
from pyspark.sql import functions as F
def f(df, state, handle):
    w = Window.partitionBy("u").orderBy("t")
    state.remove()
    handle.deleteTimer(t)
    self.cache.clear()
    items.remove(x)
    return (
        df.withWatermark("t", D)
        .dropDuplicates(["id"])
        .where(F.filter(c, g))
        .writeStream.outputMode("append")
        .option("a", x)
        .trigger(**t)
    )
"""
    # F.filter is a function of the functions module, and items is no state: both stay.
    assert names(source, "drop-call") == [
        "drop-call in f: Window.partitionBy('u') -> (removed)",
        "drop-call in f: state.remove() -> (removed)",
        "drop-call in f: handle.deleteTimer(t) -> (removed)",
        "drop-call in f: self.cache.clear() -> (removed)",
        "drop-call in f: df.withWatermark('t', D) -> (removed)",
        "drop-call in f: .dropDuplicates(['id']) -> (removed)",
        "drop-call in f: .where(F.filter(c, g)) -> (removed)",
        "drop-call in f: .outputMode('append') -> (removed)",
        "drop-call in f: .option('a', x) -> (removed)",
        "drop-call in f: .trigger(**t) -> (removed)",
    ]
    removed = next(mutant for mutant in mutants(source) if "state.remove" in mutant.name)
    assert "        pass\n" not in removed.source and "    pass\n" in removed.source
    # A step goes with its own line; the rest of the chain keeps its layout.
    step = next(mutant for mutant in mutants(source) if ".option(" in mutant.name)
    assert step.source == source.replace('        .option("a", x)\n', "")


def test_move_filter_swaps_a_watermark_and_a_filter():
    source = """
def f(df):
    a = df.withWatermark("t", D).filter(c)
    b = df.where(c).withWatermark("t", D)
    return a, b
"""
    assert names(source, "move-filter") == [
        "move-filter in f: .withWatermark('t', D).filter(c) -> .filter(c).withWatermark('t', D)",
        "move-filter in f: .where(c).withWatermark('t', D) -> .withWatermark('t', D).where(c)",
    ]


def test_loosen_merge_drops_a_conjunct_or_an_actions_condition():
    source = """
COND = "s.v > t.v AND (s.k = t.k AND s.j = t.j)"
def f(t, s):
    (
        t.merge(s, "t.id = s.id AND t.day = s.day")
        .whenMatchedUpdate(condition=COND, set={})
        .whenNotMatchedInsert(condition=ok)
        .execute()
    )
"""
    assert names(source, "loosen-merge") == [
        # COND is the action's condition: changed where it is defined.
        "loosen-merge in COND: 's.v > t.v AND (s.k = t.k AND s.j = t.j)' -> "
        "'(s.k = t.k AND s.j = t.j)'",
        "loosen-merge in COND: 's.v > t.v AND (s.k = t.k AND s.j = t.j)' -> 's.v > t.v'",
        "loosen-merge in COND: 's.v > t.v AND (s.k = t.k AND s.j = t.j)' -> "
        "'s.v > t.v AND (s.j = t.j)'",
        "loosen-merge in COND: 's.v > t.v AND (s.k = t.k AND s.j = t.j)' -> "
        "'s.v > t.v AND (s.k = t.k)'",
        "loosen-merge in f: 't.id = s.id AND t.day = s.day' -> 't.day = s.day'",
        "loosen-merge in f: 't.id = s.id AND t.day = s.day' -> 't.id = s.id'",
        "loosen-merge in f: .whenMatchedUpdate(condition=COND, set={}) -> "
        ".whenMatchedUpdate(set={})",
        "loosen-merge in f: .whenNotMatchedInsert(condition=ok) -> .whenNotMatchedInsert()",
    ]


def test_bool_flips_a_keyword_argument():
    source = """
def f(q):
    return q.trigger(availableNow=True).start(append=False, n=x)
"""
    assert names(source, "bool") == [
        "bool in f: availableNow=True -> availableNow=False",
        "bool in f: append=False -> append=True",
    ]


# --- Names, sources, the exercises' mutants ---------------------------------------------------


def test_names_stay_when_lines_move_and_repeats_are_numbered():
    source = """
DELAY = "5 seconds"


def f(df):
    return df.withWatermark("t", DELAY).where(F.col("a") > 1).where(F.col("a") > 1)
"""
    before = {mutant.name: mutant.line for mutant in mutants(source)}
    moved = "import os\n\n# a comment\nOTHER = 'x'\n" + source
    after = {mutant.name: mutant.line for mutant in mutants(moved)}
    assert after == {name: line + 4 for name, line in before.items()}
    assert "compare in f: F.col('a') > 1 -> F.col('a') >= 1#2" in before


def test_a_mutant_made_twice_is_kept_once():
    # Both drop-key and drop-call can leave `df` alone; a swap of equal values changes nothing.
    source = "def f(df, a, b):\n    return df.filter(a & b), g('5 seconds', '5 seconds')\n"
    sources = [mutant.source for mutant in mutants(source)]
    assert len(sources) == len(set(sources))
    assert not [mutant for mutant in mutants(source) if mutant.operator == "swap"]


def test_only_mutates_the_named_statements():
    source = "X = 1\nPREDICTION = [(1, 'a')]\n\ndef f():\n    return 2\n"
    assert [mutant.name for mutant in mutants(source, only={"PREDICTION"})] == [
        "number in PREDICTION: (1, 'a') -> (2, 'a')",
        "number in PREDICTION: (1, 'a') -> (0, 'a')",
    ]


@pytest.mark.parametrize("exercise", EXERCISES, ids=[exercise.id for exercise in EXERCISES])
def test_a_mutant_is_the_solution_with_one_change(exercise):
    solution = catalog.solution(exercise).read_text(encoding="utf-8")
    for mutant in MUTANTS[exercise.id]:
        assert ast.dump(ast.parse(mutant.source)) != ast.dump(ast.parse(solution))
        # Spliced into the solution's text, so the rest keeps its comments and layout (a module
        # unparsed from its tree would differ on most lines).
        changed = diff(exercise, mutant).count("\n-")
        assert 1 <= changed <= 4, f"{mutant.name}:\n{diff(exercise, mutant)}"


def test_every_listed_equivalent_mutant_still_exists():
    """A solution edited since: its listed mutant may be gone (or renamed). The lane asserts that
    a listed one still passes."""
    for exercise_id, listed in EQUIVALENT.items():
        assert exercise_id in MUTANTS, f"{EQUIVALENT_FILE.name} lists exercise {exercise_id}"
        current = {mutant.name for mutant in MUTANTS[exercise_id]}
        for name, why in listed.items():
            assert name in current, (
                f"{EQUIVALENT_FILE.name} lists a mutant of {exercise_id} that no longer exists: "
                f"{name!r}. Remove it, or rename it after `python -m tools.mutants list "
                f"{exercise_id} --names`."
            )
            assert why.strip(), f"{exercise_id} {name}: say why it is equivalent"


# --- The lanes: each mutant checked like a learner's file -------------------------------------


def lane(marker, choose) -> list:
    params = []
    for exercise in EXERCISES:
        for mutant in choose(exercise, MUTANTS[exercise.id]):
            params.append(
                pytest.param(exercise, mutant, id=f"{exercise.id}-{mutant.name}", marks=[marker])
            )
    return params


def check_mutant(spark, exercise, mutant, tmp_path) -> None:
    path = write_mutant(exercise, mutant, tmp_path / "mutant")
    verdict = check(spark, exercise, path, tmp_path / "work", pristine_ok=True)
    why = EQUIVALENT.get(exercise.id, {}).get(mutant.name)
    if why is not None:
        assert verdict.status == PASSED, (
            f"{EQUIVALENT_FILE.name} lists this mutant as equivalent ({why}), but the check "
            f"says {verdict.status}: it is not equivalent, remove it.\n{verdict.report}"
        )
    else:
        assert verdict.status != PASSED, (
            f"The check passes this mutant of the reference solution: add a scenario that tells "
            f"it apart, or, if it cannot differ, list it in {EQUIVALENT_FILE.name} with why.\n"
            f"{diff(exercise, mutant)}"
        )


@pytest.mark.parametrize(
    ("exercise", "mutant"), lane(pytest.mark.mutants, lambda exercise, found: found)
)
def test_the_check_fails_every_mutant(spark, exercise, mutant, tmp_path):
    check_mutant(spark, exercise, mutant, tmp_path)


@pytest.mark.parametrize(
    ("exercise", "mutant"),
    lane(pytest.mark.mutants_sample, lambda exercise, found: sample(exercise.id, found)),
)
def test_the_check_fails_a_sample_of_mutants(spark, exercise, mutant, tmp_path):
    check_mutant(spark, exercise, mutant, tmp_path)
