"""The exercises: every reference solution passes, every pristine file is "not started", every
shipped mistake is rejected with its own hint, and the commands do what the README says.

The checks run in the suite's one Spark session (the ``spark`` fixture). The survive exercises
kill a child process and restart it (two JVMs a scenario): they run in the crash lane.
"""

from __future__ import annotations

import ast
import json
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "streaming_tutorial"))

from practice import answers, catalog, checking, cli, progress  # noqa: E402
from practice.checking import FAILING, NOT_STARTED, PASSED, check  # noqa: E402
from practice.observe import observe  # noqa: E402
from practice.record import dumps  # noqa: E402
from practice.spec import KINDS  # noqa: E402

EXERCISES = catalog.all_exercises()
IDS = [exercise.id for exercise in EXERCISES]
LESSONS = {path.stem for path in (ROOT / "streaming_tutorial").glob("[0-9][0-9]_*.py")}


@pytest.fixture(autouse=True)
def one_shuffle_partition(request):
    """The checks run as `exercises check` runs them: one shuffle partition (practice/session.py),
    so each stateful micro-batch keeps one state store instead of one per core."""
    if "spark" not in request.fixturenames:
        yield
        return
    spark = request.getfixturevalue("spark")
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


@pytest.fixture(autouse=True)
def kafka_for_the_check(request):
    """A check that runs its queries on Kafka (Exercise.kafka: 13.2, real-time mode) gets the test
    run's broker, through KAFKA_BOOTSTRAP_SERVERS, never the learner's; a test that runs no
    Spark (reads the exercise's files only) starts no broker."""
    callspec = getattr(request.node, "callspec", None)
    exercise = callspec.params.get("exercise") if callspec else None
    if getattr(exercise, "kafka", False) and "spark" in request.fixturenames:
        request.getfixturevalue("kafka_bootstrap")


def marks(exercise) -> list:
    return [pytest.mark.crash] if exercise.kind == "survive" else []


def each_exercise(lane=None):
    """Every exercise as a test parameter (a survive exercise in the crash lane), and in
    ``lane`` too if given."""
    extra = [lane] if lane is not None else []
    return [
        pytest.param(exercise, id=exercise.id, marks=[*marks(exercise), *extra])
        for exercise in EXERCISES
    ]


def each_answer(files):
    """(exercise, file) for every file ``files(exercise)`` lists: the shipped mistakes or the
    other right answers, each checked like a learner's file. They are the mistakes lane, beside
    the crash lane in CI (conftest): a few seconds each on 2 cores."""
    return [
        pytest.param(
            exercise,
            path,
            id=f"{exercise.id}-{path.stem}",
            marks=[*marks(exercise), pytest.mark.mistakes],
        )
        for exercise in EXERCISES
        for path in files(exercise)
    ]


# --- The catalog: what every exercise must have (no Spark) ----------------------------------


def test_there_are_enough_exercises_of_every_kind():
    kinds = [exercise.kind for exercise in EXERCISES]
    assert len(EXERCISES) >= 25
    assert len({exercise.lesson for exercise in EXERCISES}) >= 12
    assert set(kinds) == set(KINDS)
    assert kinds.count("predict") >= 3
    assert kinds.count("fix") >= 3
    assert kinds.count("survive") >= 1
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_an_exercise_has_its_files_hints_and_lesson(exercise):
    assert exercise.lesson in LESSONS, f"{exercise.lesson} is not a lesson"
    assert len(exercise.hints) >= 2
    assert exercise.practises.strip()
    assert catalog.pristine(exercise).exists()
    assert catalog.solution(exercise).exists()
    docstring = catalog.pristine(exercise).read_text()
    assert f"practises lesson {exercise.lesson[:2]}" in docstring
    assert f"exercises check {exercise.id}" in docstring
    recorded = json.loads(catalog.expected_file(exercise).read_text())["scenarios"]
    assert len(recorded) == len(exercise.scenarios)
    if exercise.kind != "predict":
        assert any(scenario.hidden for scenario in exercise.scenarios), "no hidden scenario"
    names = [mistake.name for mistake in exercise.mistakes]
    files = [path.stem for path in catalog.mistakes(exercise)]
    assert files, "no shipped mistake"
    assert sorted(files) == sorted(names), "a Mistake without its file, or a file without one"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_an_exercise_says_why_its_answer_works(exercise):
    """``why``, shown after a pass: a short paragraph on the concept, 2 to 4 sentences."""
    why = exercise.why.strip()
    assert why, "no why="
    sentences = [part for part in re.split(r"(?<=[.!?])\s+", why) if part]
    assert 2 <= len(sentences) <= 4, sentences
    assert why != exercise.practises.strip()


# The stub's line on its check's time, measured (docs/PERFORMANCE.md, "Each exercise's check").
CHECK_TIME = re.compile(r"^The check takes about \d+ seconds \(measured on 2 cores[;:)]")


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_a_stub_says_how_long_its_check_takes(exercise):
    docstring = ast.get_docstring(ast.parse(catalog.pristine(exercise).read_text()))
    before, found, _ = docstring.partition("Check it:")
    assert found, "no 'Check it:' line"
    # The paragraph right before "Check it:".
    assert CHECK_TIME.match(before.rstrip().split("\n\n")[-1]), before[-200:]


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_an_exercise_folder_holds_its_files_and_answers_that_apply(exercise):
    """One folder per exercise: nothing else in it, every stored answer a diff that still
    applies to the solution, and the expected output one row per line (as record writes it)."""
    folder = catalog.folder(exercise)
    known = {catalog.STUB, catalog.SOLUTION, catalog.CHECK, catalog.EXPECTED}
    known |= {catalog.MISTAKES, catalog.ALTERNATIVES, "__pycache__"}
    assert {path.name for path in folder.iterdir()} <= known
    for path in [*catalog.mistakes(exercise), *catalog.alternatives(exercise)]:
        answer = answers.whole_file(exercise, path)
        assert answer != catalog.solution(exercise).read_text(encoding="utf-8"), path.name
        compile(answer, path.name, "exec")
    text = catalog.expected_file(exercise).read_text(encoding="utf-8")
    assert text == dumps(json.loads(text)["scenarios"]), "expected.json: run practice.record"


def test_a_stored_answer_is_its_difference_and_a_changed_solution_is_named():
    solution = "def f():\n    # why\n    return 1\n\n\nX = 2\n"
    answer = "def f():\n    # why\n    return 0\n\n\nX = 2\n"
    diff = answers.difference(solution, answer, "mistakes/zero")
    assert "-    return 1\n+    return 0\n" in diff
    assert answers.applied(solution, diff) == answer
    # An editor that strips the blank context line's space changes nothing.
    assert answers.applied(solution, diff.replace("\n \n", "\n\n")) == answer
    with pytest.raises(answers.DiffError, match="line 3 of the solution"):
        answers.applied(solution.replace("return 1", "return 2"), diff, "09.1 mistakes/zero")


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_a_lesson_names_its_exercises(exercise):
    lesson = (ROOT / "streaming_tutorial" / f"{exercise.lesson}.py").read_text()
    assert f"exercises check {exercise.id}" in lesson.split('"""')[1]


def test_quick_reference_and_readme_list_every_exercise():
    readme = (ROOT / "README.md").read_text()
    quick = (ROOT / "QUICK_REFERENCE.md").read_text()
    assert "python course.py exercises watch" in readme
    for exercise in EXERCISES:
        assert f"{exercise.id} " in quick, f"{exercise.id} is not in QUICK_REFERENCE.md"
        link = catalog.pristine(exercise).relative_to(ROOT).as_posix()
        assert f"]({link})" in quick, f"QUICK_REFERENCE.md does not link {link}"


# --- The checks, on the suite's Spark session -----------------------------------------------


@pytest.mark.parametrize("exercise", each_exercise())
def test_the_reference_solution_passes_its_visible_scenarios(spark, exercise, tmp_path):
    verdict = check(spark, exercise, catalog.solution(exercise), tmp_path, visible_only=True)
    assert verdict.status == PASSED, f"{verdict.report}\n{verdict.hint}"
    visible = [scenario for scenario in exercise.scenarios if not scenario.hidden]
    assert len(verdict.observations) == len(visible)


@pytest.mark.parametrize("exercise", each_exercise(lane=pytest.mark.mistakes))
def test_the_reference_solution_passes_every_scenario(spark, exercise, tmp_path):
    """The hidden scenarios too (scrambled, with the retries and crashes): the exercises'
    lane, with the shipped mistakes and the other right answers."""
    verdict = check(spark, exercise, catalog.solution(exercise), tmp_path)
    assert verdict.status == PASSED, f"{verdict.report}\n{verdict.hint}"
    assert len(verdict.observations) == len(exercise.scenarios)


@pytest.mark.parametrize("exercise", each_exercise())
def test_the_pristine_file_is_not_started(spark, exercise, tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_bytes(catalog.pristine(exercise).read_bytes())
    # As copied: untouched, so "not started". A stub is not run; a fix exercise's query as
    # given is, and its failing table is the symptom the learner sees first (a known mistake's
    # hint would give the fix away: none).
    untouched = check(spark, exercise, catalog.pristine(exercise), tmp_path / "untouched")
    assert untouched.status == NOT_STARTED
    assert untouched.symptom == (exercise.kind == "fix")
    if exercise.kind == "fix":
        assert untouched.report.startswith("In scenario 1:"), untouched.report
        assert "Traceback" not in untouched.report and not untouched.hint
        return
    assert untouched.report == checking.UNTOUCHED
    # Run as it is: a stub's TODO is "not started" too, never a traceback.
    verdict = check(spark, exercise, catalog.pristine(exercise), tmp_path / "run", pristine_ok=True)
    assert verdict.status == NOT_STARTED, verdict.report
    assert "Traceback" not in verdict.report


@pytest.mark.parametrize(("exercise", "path"), each_answer(catalog.mistakes))
def test_a_shipped_mistake_is_rejected_with_its_hint(spark, exercise, path, tmp_path):
    verdict = check(spark, exercise, answers.written(exercise, path, tmp_path / "answer"), tmp_path)
    assert verdict.status == FAILING
    assert verdict.mistake == path.stem, f"{verdict.report}\n{verdict.hint}"
    hint = next(mistake.hint for mistake in exercise.mistakes if mistake.name == path.stem)
    assert verdict.hint == hint
    assert "Traceback" not in verdict.report


@pytest.mark.parametrize(("exercise", "path"), each_answer(catalog.alternatives))
def test_an_alternative_right_answer_passes(spark, exercise, path, tmp_path):
    answer = answers.written(exercise, path, tmp_path / "answer")
    verdict = check(spark, exercise, answer, tmp_path, pristine_ok=True)
    assert verdict.status == PASSED, f"{verdict.report}\n{verdict.hint}"


BUILT = [exercise for exercise in EXERCISES if exercise.kind in ("build", "fix")]


@pytest.mark.parametrize("exercise", BUILT, ids=[exercise.id for exercise in BUILT])
def test_a_build_or_fix_exercise_has_two_alternatives(exercise):
    assert len(catalog.alternatives(exercise)) >= 2, exercise.id


MIRRORS = [exercise for exercise in EXERCISES if exercise.mirrors]


@pytest.mark.parametrize("exercise", MIRRORS, ids=[exercise.id for exercise in MIRRORS])
def test_an_exercise_expects_what_the_lesson_function_it_mirrors_emits(spark, exercise, tmp_path):
    from common.paths import import_lesson

    lesson, function = exercise.mirrors.split(":")
    # The lesson's function where the learner's goes: the exercise's own run, if it has one.
    as_module = SimpleNamespace(**{exercise.function: getattr(import_lesson(lesson), function)})
    if exercise.kind == "predict":
        observed = observe(
            spark, exercise, as_module.__dict__[exercise.function], exercise.scenarios[0], tmp_path
        )
    else:
        observed = checking.run_scenario(
            spark, exercise, as_module, exercise.scenarios[0], tmp_path
        )
    assert checking.compare(exercise, catalog.expected(exercise)[0], observed) == ""


# --- The checker's messages ------------------------------------------------------------------


def session_exercise():
    return catalog.find(EXERCISES, "06.1")


def test_a_wrong_answer_gets_a_table_per_batch_not_a_traceback(spark, tmp_path):
    exercise = session_exercise()
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        catalog.solution(exercise)
        .read_text()
        .replace('SESSION_GAP = "5 seconds"', 'SESSION_GAP = "6 seconds"')
    )
    verdict = check(spark, exercise, wrong, tmp_path / "work")
    assert verdict.status == FAILING
    assert "Batch 3:  expected [watermark 10:30:30, dropped 0]" in verdict.report
    assert "- ('10:30:02', '10:30:11', 'SENSOR-0', 2)" in verdict.report
    assert "+ ('10:30:02', '10:30:12', 'SENSOR-0', 2)   (not expected)" in verdict.report
    assert "Traceback" not in verdict.report


def test_a_python_error_names_the_line_of_the_learners_file(spark, tmp_path):
    exercise = session_exercise()
    broken = tmp_path / "broken.py"
    broken.write_text(
        catalog.solution(exercise)
        .read_text()
        .replace('.agg(F.count("*").alias("readings"))', '.agg(F.count("*").alias(reading_count))')
    )
    verdict = check(spark, exercise, broken, tmp_path / "work")
    assert verdict.status == FAILING
    assert verdict.report.startswith("broken.py, line ")
    assert "NameError: name 'reading_count' is not defined" in verdict.report


def test_a_syntax_error_is_one_line(spark, tmp_path):
    exercise = session_exercise()
    broken = tmp_path / "broken.py"
    broken.write_text("def build_closed_sessions(readings):\n    return (\n")
    verdict = check(spark, exercise, broken, tmp_path / "work")
    assert verdict.status == FAILING
    assert verdict.report.startswith("broken.py, line ")
    assert "SyntaxError" in verdict.report


# --- The commands ------------------------------------------------------------------------------


def test_start_copies_every_exercise_and_never_overwrites(tmp_path, capsys):
    root = tmp_path / "my_exercises"
    first = EXERCISES[0]
    kept = catalog.mine(first, root)
    kept.parent.mkdir(parents=True)
    kept.write_text("# my work\n")
    assert cli.start(EXERCISES, root) == 0
    assert kept.read_text() == "# my work\n"
    for exercise in EXERCISES[1:]:
        assert catalog.mine(exercise, root).read_bytes() == catalog.pristine(exercise).read_bytes()
    assert f"Copied {len(EXERCISES) - 1} exercise files" in capsys.readouterr().out


def test_progress_survives_renamed_and_unknown_exercises(tmp_path):
    root = tmp_path / "my_exercises"
    cli.start(EXERCISES, root)
    exercise = EXERCISES[0]
    mine = catalog.mine(exercise, root)
    mine.write_text(catalog.solution(exercise).read_text())
    verdict = checking.Verdict(exercise, PASSED)
    progress.record_verdict(verdict, mine, root)
    entries = progress.load(root)
    entries["99.9"] = {"status": PASSED, "digest": "0"}  # an exercise a git pull renamed
    progress.save(entries, root)
    assert progress.status_of(exercise, root) == (PASSED, False)
    mine.write_text(mine.read_text() + "\n# edited\n")
    assert progress.status_of(exercise, root) == (PASSED, True)  # stale until checked again
    progress.progress_file(root).write_text("{not json")
    assert progress.status_of(exercise, root) == ("not checked", False)
    assert progress.status_of(EXERCISES[1], root) == (NOT_STARTED, False)


def test_hints_come_one_level_at_a_time(tmp_path, capsys):
    exercise = EXERCISES[0]
    cli.hint(exercise, tmp_path)
    first = capsys.readouterr().out
    assert f"Hint 1 of {len(exercise.hints)}" in first and "Hint 2 of" not in first
    cli.hint(exercise, tmp_path)
    assert f"Hint 2 of {len(exercise.hints)}" in capsys.readouterr().out


# A hint that points at a lesson names it in one form: "lesson 09, `build_ad_join`" (backticks
# optional): a function, a class, a method as Class.method, or a constant of the lesson or its
# companion files (lessonNN_*.py).
LESSON_REFERENCE = re.compile(r"lesson (\d\d), `?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
# Code in a level-1 hint: a method call (".withWatermark(") or the functions module ("F.").
CODE = re.compile(r"\w\.\w+\(|\bF\.")


def names_in_lesson(number: str) -> set[str]:
    """Every function, class and method (also as Class.method) and every module-level name of
    lesson ``number`` and its companions (lessonNN_*.py)."""
    folder = ROOT / "streaming_tutorial"
    names = set()
    for path in [*folder.glob(f"{number}_*.py"), *folder.glob(f"lesson{number}_*.py")]:
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(target.id for target in targets if isinstance(target, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names.update(
                    f"{node.name}.{item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef)
                )
    return names


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_hint_levels_ask_then_point_at_the_lesson(exercise):
    """Level 1 asks a question about the idea, without code; level 2 points at a lesson's
    function; every lesson function a hint names exists in that lesson."""
    first, *later = exercise.hints
    assert "?" in first, "hint 1 asks no question"
    assert "`" not in first and not CODE.search(first), "hint 1 names code"
    assert LESSON_REFERENCE.search(later[0]), "hint 2 names no lesson function"
    for hint in later:
        for number, name in LESSON_REFERENCE.findall(hint):
            assert name in names_in_lesson(number), f"lesson {number} has no {name}"


def without_spaces(code: str) -> str:
    """Code compared as text: no whitespace, one kind of quote."""
    return re.sub(r"\s+", "", code).replace('"', "'")


SHOWN_ELSEWHERE = without_spaces(
    "".join(path.read_text() for path in (ROOT / "streaming_tutorial").glob("*.py"))
    + (ROOT / "QUICK_REFERENCE.md").read_text()
)
BUILDS = [exercise for exercise in EXERCISES if exercise.kind != "predict"]


@pytest.mark.parametrize("exercise", BUILDS, ids=[exercise.id for exercise in BUILDS])
def test_a_hint_points_at_code_it_does_not_dictate_the_answer(exercise):
    """Levels 2-3 may quote a line the learner can see already (a lesson, QUICK_REFERENCE, the
    stub), never an expression of the reference solution found nowhere else: that would be the
    answer, dictated."""
    solution = catalog.solution(exercise).read_text()
    seen = SHOWN_ELSEWHERE + without_spaces(catalog.pristine(exercise).read_text())
    answer_only = set()
    for node in ast.walk(ast.parse(solution)):
        if isinstance(node, (ast.Call, ast.Compare, ast.BinOp, ast.Subscript)):
            code = without_spaces(ast.get_source_segment(solution, node) or "")
            if len(code) >= 20 and code not in seen:  # shorter: a name, a literal
                answer_only.add(code)
    for level, hint in enumerate(exercise.hints[1:], start=2):
        quoted = sorted(code for code in answer_only if code in without_spaces(hint))
        assert not quoted, f"hint {level} dictates {quoted[-1]}"


def tokens(text: str) -> set[str]:
    """The words and values of a text ('10:30:05', '10.25', 'AD-1'); a time of whole minutes
    also as 'HH:MM'."""
    found = {token.strip(".:-") for token in re.findall(r"[\w.:-]+", text)}
    return found | {token[:-3] for token in found if re.fullmatch(r"\d\d:\d\d:00", token)}


def leaves(value) -> list:
    """The plain values in a (nested) answer: rows, batches, {run: counts}."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


PREDICT = [exercise for exercise in EXERCISES if exercise.kind == "predict"]


@pytest.mark.parametrize("exercise", PREDICT, ids=[exercise.id for exercise in PREDICT])
def test_a_predict_exercise_last_hint_gives_a_method_not_its_answer(exercise):
    """No value of Spark's recorded answer that the learner's file does not show already (a
    count, an average, a watermark) is in the last hint, nor any batch of the answer."""
    last = exercise.hints[-1]
    given = tokens(catalog.pristine(exercise).read_text())
    for observation in catalog.expected(exercise):
        answer = checking.predicted_value(exercise, observation)
        values = leaves(answer) + leaves([batch.rows for batch in observation.batches])
        values += [batch.watermark for batch in observation.batches]
        derived = {token for value in values if value is not None for token in tokens(str(value))}
        assert not (derived - given) & tokens(last), "the last hint gives part of the answer"
        for batch in answer.values() if isinstance(answer, dict) else answer:
            if batch:
                assert checking.format_value(batch) not in last, "the last hint gives a batch"


def test_the_solution_opens_only_after_a_pass(tmp_path, capsys):
    root = tmp_path / "my_exercises"
    cli.start(EXERCISES, root)
    exercise = EXERCISES[0]
    assert cli.show_solution(exercise, root) == 1
    assert "opens once your answer has passed" in capsys.readouterr().out
    mine = catalog.mine(exercise, root)
    mine.write_text(catalog.solution(exercise).read_text() + "# mine\n")
    progress.record_verdict(checking.Verdict(exercise, PASSED), mine, root)
    assert cli.show_solution(exercise, root) == 0
    assert "-# mine" in capsys.readouterr().out


def test_a_pass_says_why_it_works_and_what_comes_next(tmp_path, capsys, monkeypatch):
    """check_command after a pass, with a stand-in for Spark: why it works, the solution's
    command and the next exercise not passed yet; once all pass, the closing message."""
    root = tmp_path / "my_exercises"
    cli.start(EXERCISES, root)
    first, second, third = EXERCISES[:3]
    monkeypatch.setattr(cli, "exercise_session", lambda: None)
    monkeypatch.setattr(
        cli, "check", lambda spark, exercise, path, workdir: checking.Verdict(exercise, PASSED)
    )
    for exercise in EXERCISES:
        catalog.mine(exercise, root).write_text(catalog.solution(exercise).read_text())
    # The second passed already: next after the first is the third.
    progress.record_verdict(checking.Verdict(second, PASSED), catalog.mine(second, root), root)
    capsys.readouterr()
    assert cli.check_command([first], root, EXERCISES) == 0
    out = capsys.readouterr().out
    assert "Why it works: " + first.why[:40] in out.replace("\n", " ")
    assert f"python course.py exercises solution {first.id}" in out
    assert f"Next: {third.id} {third.title}" in out
    assert f"python course.py exercises check {third.id}" in out
    # Checking all: the rest pass, and the closing message replaces "Next".
    assert cli.check_command(EXERCISES, root, EXERCISES, symptoms=False) == 0
    out = capsys.readouterr().out
    assert "Next:" not in out
    assert f"Every exercise passes: all {len(EXERCISES)} of them." in out
    assert "Where next:" in out


def test_a_spark_that_cannot_start_gets_its_advice_not_a_traceback(tmp_path, capsys, monkeypatch):
    """exercise_session's CourseError (its connector jars not downloaded yet, and no network...)
    is printed as the advice it is, and the command exits 1."""
    from infra.errors import CourseError

    root = tmp_path / "my_exercises"
    cli.start(EXERCISES, root)
    first = EXERCISES[0]
    catalog.mine(first, root).write_text(catalog.solution(first).read_text())
    monkeypatch.setattr(catalog, "MY_DIR", root)

    def no_spark():
        raise CourseError("Spark could not start because it could not download its jars.")

    monkeypatch.setattr(cli, "exercise_session", no_spark)
    capsys.readouterr()
    assert cli.main(["check", first.id]) == 1
    assert (
        "Spark could not start because it could not download its jars." in capsys.readouterr().out
    )


def test_checking_them_all_leaves_an_untouched_fix_exercise_alone(tmp_path, capsys, monkeypatch):
    """Named, an untouched fix exercise is run (its symptom); in a check of them all it is
    "not started" at once, with the command that shows the symptom."""
    root = tmp_path / "my_exercises"
    cli.start(EXERCISES, root)
    fix = next(exercise for exercise in EXERCISES if exercise.kind == "fix")
    monkeypatch.setattr(cli, "check", lambda *args: pytest.fail("a check ran"))
    assert cli.check_command([fix], root, EXERCISES, symptoms=False) == 1
    out = capsys.readouterr().out
    assert f"{fix.id} {fix.title}: not started" in out
    assert f"python course.py exercises check {fix.id} runs the query as given" in out


def test_the_tour_and_the_help_point_to_exercises_start(capsys):
    import course

    # The tour's last lines, printed once every lesson has run.
    assert "python course.py exercises start" in course.NEXT_STEPS
    for main in (course.main, cli.main):  # python course.py --help, ... exercises --help
        with pytest.raises(SystemExit):
            main(["--help"])
        assert "python course.py exercises start" in " ".join(capsys.readouterr().out.split())


def test_exercises_command_lists_and_checks_on_a_fresh_copy(course_home):
    environment = {"STREAMING_COURSE_HOME": str(course_home)}

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "tools.exercises", *args],
            cwd=ROOT,
            env={**__import__("os").environ, **environment},
            capture_output=True,
            text=True,
            timeout=120,
        )

    listed = run()
    assert listed.returncode == 0, listed.stderr
    assert "Begin with: python course.py exercises start" in listed.stdout
    assert run("start").returncode == 0
    checked = run("check", "06.1")  # untouched: not started, without starting Spark
    assert checked.returncode == 1
    assert "06.1 Sessions that close: not started" in checked.stdout
    assert "Starting Spark" not in checked.stdout
    unknown = run("check", "99.9")
    assert unknown.returncode == 2
    assert "no exercise '99.9'" in unknown.stdout


# --- watch -------------------------------------------------------------------------------------


def test_watch_checks_each_save_and_answers_its_keys(spark, tmp_path, capsys):
    from practice.watch import Watcher

    root = tmp_path / "my_exercises"
    cli.start(EXERCISES, root)
    exercise = session_exercise()
    replies = iter([False, True])
    watcher = Watcher(
        spark, EXERCISES, root, exercise, ask=lambda question: next(replies), work_root=tmp_path
    )
    mine = catalog.mine(exercise, root)
    wrong = catalog.folder(exercise) / catalog.MISTAKES / "gap_too_long.diff"
    mine.write_text(answers.whole_file(exercise, wrong))
    watcher.on_saved({mine.resolve()})
    assert watcher.last.status == FAILING and watcher.last.mistake == "gap_too_long"
    assert not spark.streams.active
    mine.write_bytes(catalog.solution(exercise).read_bytes())
    watcher.on_saved({mine.resolve()})
    assert watcher.last.status == PASSED
    passed = " ".join(capsys.readouterr().out.split())
    assert "Why it works: " + " ".join(exercise.why.split())[:60] in passed
    assert f"s (or python course.py exercises solution {exercise.id})" in passed
    following = EXERCISES[EXERCISES.index(exercise) + 1]
    assert f"Next: {following.id} {following.title} ({following.kind})" in passed
    assert watcher.on_key("s") is True
    assert "Your file is the reference solution" in capsys.readouterr().out
    watcher.on_key("r")  # answered no: kept
    assert mine.read_bytes() == catalog.solution(exercise).read_bytes()
    watcher.on_key("r")  # answered yes: pristine again
    assert mine.read_bytes() == catalog.pristine(exercise).read_bytes()
    watcher.on_key("n")
    assert watcher.current is not exercise
    assert watcher.on_key("q") is False


def test_watch_notices_a_save(tmp_path):
    from practice.watch import watch_saves

    root = tmp_path / "my_exercises"
    root.mkdir()
    events: queue.Queue = queue.Queue()
    stop = threading.Event()
    thread = threading.Thread(target=watch_saves, args=(root, events, stop), daemon=True)
    thread.start()
    try:
        saved = root / "ex1_x.py"
        # watchfiles starts watching asynchronously: save until a change is reported.
        for attempt in range(50):
            saved.write_text(f"X = {attempt}\n")
            try:
                kind, changed = events.get(timeout=0.2)
                break
            except queue.Empty:
                continue
        else:
            pytest.fail("no save was reported")
        assert kind == "saved" and saved.resolve() in changed
    finally:
        stop.set()
        thread.join(timeout=10)


def test_a_network_folder_is_polled(monkeypatch):
    from practice import watch

    monkeypatch.setattr(watch, "file_system_of", lambda path: "cifs")
    assert watch.must_poll(Path("/mnt/share")) is True
    monkeypatch.setattr(watch, "file_system_of", lambda path: "ext4")
    assert watch.must_poll(Path("/home")) is None


def test_a_predicted_row_written_as_a_list_counts_as_the_tuple():
    """A right prediction is right however its rows are written: [1, 'a'] or (1, 'a'),
    whatever their order, an empty first batch and a nested window included."""
    spark_said = checking.normalise_prediction(
        [[], [("a", 1), ("b", 2)], [(("10:00:00", "10:01:00"), "x", 3)]]
    )
    written = [[], [["b", 2], ["a", 1]], [[["10:00:00", "10:01:00"], "x", 3]]]
    shaped = checking.shaped_like(written, spark_said)
    assert checking.normalise_prediction(shaped) == spark_said
    wrong = [[], [["b", 2], ["a", 2]], [[["10:00:00", "10:01:00"], "x", 3]]]
    shaped = checking.shaped_like(wrong, spark_said)
    assert checking.normalise_prediction(shaped) != spark_said


def test_the_batch_table_shows_a_row_written_twice():
    from practice.observe import Batch

    want = Batch([("books", 2)], None, 0)
    got = Batch([("books", 2), ("books", 2)], None, 0)
    lines = checking.batch_table(1, want, got, show_dropped=False)
    assert lines == [
        "  Batch 1:  expected [-]   yours [-]",
        "      ('books', 2)",
        "    + ('books', 2)   (one copy too many)",
    ]
