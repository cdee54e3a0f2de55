"""``python course.py exercises [start | check | watch | hint | solution]``.

exercises                  every exercise with its status, by lesson, and a progress bar
exercises start            copy the exercises into my_exercises/ (never overwrites a file)
exercises check [ID ...]   check the named exercises, or all; exit 0 only if all pass (after a
                           pass: why it works, the next exercise; a named fix exercise not
                           started yet: what its query as given gets wrong)
exercises watch [ID]       check on every save, with one warm Spark session (keys: h n l r s q)
exercises hint ID          the next hint
exercises solution ID      the reference solution, as a diff against yours (after a pass)
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.syntax import Syntax
from rich.table import Table

from infra.errors import CourseError
from practice import catalog, progress
from practice.checking import NOT_STARTED, PASSED, UNTOUCHED, Verdict, check
from practice.session import exercise_session, workdir_for

console = Console(highlight=False, soft_wrap=True)

STATUS_STYLE = {
    PASSED: "green",
    "failing": "red",
    NOT_STARTED: "dim",
    "not checked": "yellow",
}
MARK = {PASSED: "✓", "failing": "✗", NOT_STARTED: "·", "not checked": "?"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python course.py exercises",
        description="Practise: write streaming queries, checked exactly, batch by batch.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "Begin with: python course.py exercises start (copies the exercises into\n"
            "my_exercises/), then python course.py exercises watch (or check ID).\n"
            "A fix exercise checked before you change it shows what its query gets wrong.\n"
            "After a pass: why the answer works, the next exercise not passed yet, and\n"
            "python course.py exercises solution ID."
        ),
    )
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("list", help="every exercise with its status (the default)")
    sub.add_parser("start", help="copy the exercises into my_exercises/")
    check_parser = sub.add_parser("check", help="check exercises (all, or the ids given)")
    check_parser.add_argument("ids", nargs="*", metavar="ID", help="e.g. 07.1")
    watch_parser = sub.add_parser("watch", help="check the current exercise on every save")
    watch_parser.add_argument("id", nargs="?", metavar="ID", help="the exercise to start with")
    hint_parser = sub.add_parser("hint", help="the next hint of an exercise")
    hint_parser.add_argument("id", metavar="ID")
    solution_parser = sub.add_parser("solution", help="the reference solution (after a pass)")
    solution_parser.add_argument("id", metavar="ID")
    args = parser.parse_args(argv)

    broken: list = []
    exercises = catalog.all_exercises(broken)
    for path, error in broken:
        console.print(f"[yellow]Left out {display(path)}: {type(error).__name__}: {error}[/yellow]")
    try:
        if args.action == "start":
            return start(exercises)
        if args.action == "check":
            wanted = [catalog.find(exercises, name) for name in args.ids] or exercises
            return check_command(wanted, everything=exercises, symptoms=bool(args.ids))
        if args.action == "watch":
            from practice.watch import watch

            first = catalog.find(exercises, args.id) if args.id else None
            return watch(exercises, first)
        if args.action == "hint":
            return hint(catalog.find(exercises, args.id))
        if args.action == "solution":
            return show_solution(catalog.find(exercises, args.id))
    except LookupError as error:
        console.print(f"[red]{error.args[0]}[/red]")
        return 2
    except CourseError as error:  # Spark could not start (no Java, jars not downloaded...)
        console.print(f"\n[red]{escape(str(error))}[/red]")
        return 1
    show_list(exercises)
    return 0


def start(exercises, root: Path | None = None) -> int:
    """Copy each pristine exercise file into my_exercises/, leaving existing files alone."""
    root = root or catalog.MY_DIR
    copied, kept = 0, 0
    for exercise in exercises:
        target = catalog.mine(exercise, root)
        if target.exists():
            kept += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(catalog.pristine(exercise), target)
        copied += 1
    console.print(
        f"Copied {copied} exercise files into {display(root)}/"
        + (f" ({kept} already there, left as they are)" if kept else "")
        + "."
    )
    first = next(iter(exercises), None)
    if first is not None:
        console.print(
            f"Open {display(catalog.mine(first, root))}, then: "
            f"python course.py exercises check {first.id}  (or: python course.py exercises watch)"
        )
    return 0


def display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def check_command(
    exercises,
    root: Path | None = None,
    everything: list | None = None,
    *,
    symptoms: bool = True,
) -> int:
    """Check each exercise; the JVM starts only if some file has something to check.

    ``everything``: the whole catalog, where the exercise to do next is looked for (default:
    ``exercises``). ``symptoms``: a fix exercise's untouched file is run, to show what its query
    as given gets wrong (when the learner names the exercise; checking them all does not).
    """
    root = root or catalog.MY_DIR
    everything = everything or exercises
    if not root.exists():
        console.print("There is no my_exercises/ yet: python course.py exercises start")
        return 1
    spark = None
    verdicts = []
    for exercise in exercises:
        path = catalog.mine(exercise, root)
        before = progress.status_of(exercise, root)
        untouched = not path.exists() or catalog.untouched(exercise, path)
        if untouched and not (symptoms and exercise.kind == "fix" and path.exists()):
            verdict = Verdict(exercise, NOT_STARTED, UNTOUCHED)
        else:
            if spark is None:
                console.print("[dim]Starting Spark...[/dim]")
                spark = exercise_session()
            verdict = check(spark, exercise, path, workdir_for(exercise.id))
        progress.record_verdict(verdict, path, root)
        show_verdict(verdict, root)
        # Why it works: after a new pass, or whenever the exercise is checked alone.
        if verdict.passed and (len(exercises) == 1 or before != (PASSED, False)):
            show_passed(exercise)
        verdicts.append(verdict)
    passed = sum(verdict.passed for verdict in verdicts)
    console.print(f"\n{passed} of {len(verdicts)} passed.")
    if verdicts and passed == len(verdicts):
        show_next(everything, exercises[-1], root)
    return 0 if passed == len(verdicts) else 1


def show_passed(exercise, *, in_watch: bool = False) -> None:
    """After a pass: why the answer works, and where the reference solution is."""
    if exercise.why:
        console.print(f"[bold]Why it works:[/bold] {escape(exercise.why)}")
    command = f"python course.py exercises solution {exercise.id}"
    where = f"s (or {command})" if in_watch else command
    console.print(f"[dim]The reference solution, as a diff against yours: {where}[/dim]")


def show_next(exercises, after, root: Path | None = None, *, in_watch: bool = False) -> None:
    """The next exercise not passed yet (after ``after``, in order), or the closing message
    once every exercise has passed."""
    following = progress.next_unpassed(exercises, after, root)
    if following is None:
        show_finished(exercises)
        return
    how = "press n" if in_watch else f"python course.py exercises check {following.id}"
    console.print(
        f"Next: {following.id} {following.title} ({following.kind}), in "
        f"{display(catalog.mine(following, root))}: {how}"
    )


# What each kind of exercise made the learner do (one, several), for the closing message.
DID = {
    "build": ("query written", "queries written"),
    "predict": ("output predicted", "outputs predicted"),
    "fix": ("broken query fixed", "broken queries fixed"),
    "survive": ("sink that survives kill -9", "sinks that survive kill -9"),
}


def show_finished(exercises) -> None:
    """Every exercise passes: what was practised, and where to go from here."""
    lessons = sorted({exercise.lesson for exercise in exercises})
    kinds = [exercise.kind for exercise in exercises]
    done = ", ".join(
        f"{kinds.count(kind)} {DID[kind][kinds.count(kind) > 1]}" for kind in DID if kind in kinds
    )
    topics = ", ".join(f"{lesson[:2]} {lesson[3:].replace('_', ' ')}" for lesson in lessons)
    console.print(
        f"\n[green bold]Every exercise passes: all {len(exercises)} of them.[/green bold]\n"
        f"You practised {len(lessons)} lessons ({topics}): {done}. Each answer was compared "
        "with what Spark really emits, micro-batch by micro-batch, on the scenarios you saw "
        "and, for all but the predictions, on a hidden one."
    )
    console.print(
        "Where next:\n"
        "  - the lessons again, changing them: each lesson's docstring says what it shows and "
        "how to run it; lesson 17's capstone runs on Kafka too (--source kafka);\n"
        "  - README.md: Reliability (what each sink guarantees when a batch runs again), When a "
        "checkpoint is damaged, Beyond one machine (a standalone cluster, spark-submit, your "
        "own Kafka cluster) and Performance;\n"
        "  - Spark's Structured Streaming Programming Guide: "
        "https://spark.apache.org/docs/latest/streaming/\n"
        "Your answers stay in my_exercises/: python course.py exercises solution ID compares "
        "any of them with the reference."
    )


def show_verdict(verdict: Verdict, root: Path | None = None) -> None:
    exercise = verdict.exercise
    mine = display(catalog.mine(exercise, root))
    style = STATUS_STYLE.get(verdict.status, "")
    console.print(
        f"[{style}]{MARK.get(verdict.status, '?')} {exercise.id} {exercise.title}: "
        f"{verdict.status}[/{style}]"
    )
    if verdict.status == NOT_STARTED and verdict.symptom:
        # A fix exercise's untouched file: its query as given, run, is the symptom to fix.
        console.print("  The query as given, before your fix, gets this wrong:")
        console.print(verdict.report, markup=False)
        console.print(f"[dim]  Fix it in {mine} and check again.[/dim]")
        return
    if verdict.status == NOT_STARTED and exercise.kind == "fix":
        console.print(
            f"[dim]  {verdict.report}: python course.py exercises check {exercise.id} runs the "
            f"query as given and shows what it gets wrong; then fix it in {mine}.[/dim]"
        )
        return
    if verdict.status == NOT_STARTED:
        console.print(f"[dim]  {verdict.report}: write the TODO in {mine} and check again.[/dim]")
        return
    if verdict.report:
        console.print(verdict.report, markup=False)
    if verdict.hint:
        console.print(f"[bold]Hint:[/bold] {verdict.hint}")
    elif verdict.status == "failing":
        console.print(f"[dim]Stuck? python course.py exercises hint {exercise.id}[/dim]")


def show_list(exercises, root: Path | None = None) -> None:
    entries = progress.load(root)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("id")
    table.add_column("exercise")
    table.add_column("kind")
    table.add_column("status")
    passed = 0
    lesson = None
    for exercise in exercises:
        if exercise.lesson != lesson:
            lesson = exercise.lesson
            table.add_row("", f"[bold]{lesson}[/bold]", "", "")
        status, stale = progress.status_of(exercise, root, entries)
        passed += status == PASSED
        style = STATUS_STYLE.get(status, "")
        text = f"[{style}]{MARK.get(status, '?')} {status}[/{style}]"
        if stale:
            text += " [dim](edited since)[/dim]"
        table.add_row(exercise.id, exercise.title, exercise.kind, text)
    console.print(table)
    bar = ProgressBar(total=len(exercises), completed=passed, width=40)
    console.print(bar, f" {passed}/{len(exercises)} passed", end="\n")
    if not (root or catalog.MY_DIR).exists():
        console.print("Begin with: python course.py exercises start")


def hint(exercise, root: Path | None = None, another: str = "") -> int:
    level = min(progress.next_hint_level(exercise.id, root), len(exercise.hints))
    console.print(f"[bold]{exercise.id} {exercise.title}[/bold] (practises: {exercise.practises})")
    for number in range(level):
        console.print(f"Hint {number + 1} of {len(exercise.hints)}: {exercise.hints[number]}")
    if level < len(exercise.hints):
        another = another or f"python course.py exercises hint {exercise.id}"
        console.print(f"[dim]Another: {another}[/dim]")
    return 0


def show_solution(exercise, root: Path | None = None) -> int:
    if not progress.ever_passed(exercise, root):
        console.print(
            f"The solution of {exercise.id} opens once your answer has passed: "
            f"python course.py exercises check {exercise.id}"
        )
        return 1
    mine = catalog.mine(exercise, root)
    reference = catalog.solution(exercise)
    diff = difflib.unified_diff(
        mine.read_text().splitlines(keepends=True),
        reference.read_text().splitlines(keepends=True),
        fromfile=f"yours: {display(mine)}",
        tofile=f"reference: {display(reference)}",
    )
    text = "".join(diff)
    if not text:
        console.print("Your file is the reference solution, line for line.")
        return 0
    console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
