"""Verify exercises the way the test suite does: the reference solution passes every scenario,
the pristine file is "not started", and every shipped mistake fails with its own hint.

    python -m practice.verify [ID ...]      (from streaming_tutorial/)
"""

from __future__ import annotations

import sys
from pathlib import Path

from practice import answers, catalog
from practice.checking import NOT_STARTED, check
from practice.session import exercise_session, workdir_for


def problems_of(spark, exercise, root: Path) -> list[str]:
    problems = []
    workdir = root / exercise.id.replace(".", "_")
    if len(exercise.hints) < 2:
        problems.append("fewer than two hints")
    if not any(scenario.hidden for scenario in exercise.scenarios) and exercise.kind != "predict":
        problems.append("no hidden scenario")
    verdict = check(spark, exercise, catalog.solution(exercise), workdir / "solution")
    if not verdict.passed:
        problems.append(f"the solution fails:\n{verdict.report}\n{verdict.hint}")
    verdict = check(spark, exercise, catalog.pristine(exercise), workdir / "stub", pristine_ok=True)
    if verdict.status != NOT_STARTED and exercise.kind != "fix":
        problems.append(
            f"the pristine file is {verdict.status}, not 'not started':\n{verdict.report}"
        )
    if exercise.kind == "fix" and verdict.passed:
        problems.append("the pristine (broken) query passes")
    names = {mistake.name for mistake in exercise.mistakes}
    files = catalog.mistakes(exercise)
    if not files:
        problems.append("no shipped mistake")
    for path in files:
        if path.stem not in names:
            problems.append(f"mistake {path.name} has no Mistake({path.stem!r}, ...)")
            continue
        answer = answers.written(exercise, path, workdir / "answers")
        verdict = check(spark, exercise, answer, workdir / f"mistake-{path.stem}")
        if verdict.passed or verdict.mistake != path.stem:
            problems.append(
                f"mistake {path.stem}: {verdict.status}, recognised as {verdict.mistake!r}\n"
                f"{verdict.report}\n{verdict.hint}"
            )
    return problems


def main(argv: list[str]) -> int:
    exercises = catalog.all_exercises()
    wanted = [catalog.find(exercises, name) for name in argv] or exercises
    spark = exercise_session()
    failed = 0
    for exercise in wanted:
        problems = problems_of(spark, exercise, workdir_for("verify"))
        status = "ok" if not problems else "PROBLEMS"
        print(f"{exercise.id} {exercise.title}: {status}")
        for problem in problems:
            print("  - " + problem.replace("\n", "\n    "))
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
