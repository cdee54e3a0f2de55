"""Where the exercises are, and loading them: the catalog, the learner's files, fresh imports.

One folder per exercise, ``exercises/<lesson>/ex<N>_<name>/``:
  exercise.py     the file ``exercises start`` copies to ``my_exercises/<lesson>/ex<N>_<name>.py``
  solution.py     the reference answer
  check.py        ``EXERCISE = Exercise(...)``: scenarios, hints, known mistakes
  expected.json   what Spark emits for each scenario, from the solution, one row per line
                  (``python -m practice.record ID`` writes it; review its diff)
  mistakes/       known wrong answers, each as its difference from the solution (``.diff``)
  alternatives/   other right answers, the same way: the check must pass each
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import sys
from pathlib import Path

from common.paths import COURSE_HOME, PROJECT_ROOT
from practice.observe import Observation
from practice.spec import KINDS, Exercise

EXERCISES_DIR = PROJECT_ROOT / "exercises"
STUB = "exercise.py"
SOLUTION = "solution.py"
CHECK = "check.py"
EXPECTED = "expected.json"
MISTAKES = "mistakes"
ALTERNATIVES = "alternatives"  # other right answers: each must pass
MY_DIR = COURSE_HOME / "my_exercises"  # the learner's copies; git-ignored

_fresh = itertools.count()


def load_module(path: Path, label: str = "exercise"):
    """Import ``path`` afresh (never a cached copy): a learner's file changes between checks."""
    name = f"_course_{label}_{path.stem}_{next(_fresh)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def load_exercise(check_file: Path) -> Exercise:
    exercise = load_module(check_file, "check").EXERCISE
    exercise.lesson = check_file.parent.parent.name
    exercise.stem = check_file.parent.name
    exercise.check_file = check_file
    if exercise.kind not in KINDS:
        raise ValueError(f"{check_file}: kind {exercise.kind!r} is not one of {KINDS}")
    return exercise


def all_exercises(broken: list | None = None) -> list[Exercise]:
    """Every exercise, in lesson order, then by number.

    A check file that cannot be loaded raises, unless ``broken`` is given: then it is left out
    and ``(path, error)`` is added to ``broken``, so one bad file does not stop the others.
    """
    files = sorted(
        EXERCISES_DIR.glob(f"[0-9][0-9]_*/ex[0-9]*_*/{CHECK}"),
        key=lambda path: (path.parent.parent.name, int(path.parent.name.split("_")[0][2:])),
    )
    exercises = []
    for path in files:
        try:
            exercises.append(load_exercise(path))
        except Exception as error:
            if broken is None:
                raise
            broken.append((path, error))
    return exercises


def find(exercises: list[Exercise], wanted: str) -> Exercise:
    """An exercise by id ('07.1'), by file stem ('ex1_late_readings') or by name."""
    for exercise in exercises:
        names = {exercise.id, exercise.stem, exercise.stem.split("_", 1)[1], str(exercise.relative)}
        if wanted in names:
            return exercise
    known = ", ".join(exercise.id for exercise in exercises)
    raise LookupError(f"no exercise {wanted!r}; the exercises are {known}")


def folder(exercise: Exercise) -> Path:
    """The exercise's own folder: its stub, solution, check, expected output and answers."""
    return EXERCISES_DIR / exercise.lesson / exercise.stem


def pristine(exercise: Exercise) -> Path:
    return folder(exercise) / STUB


def solution(exercise: Exercise) -> Path:
    return folder(exercise) / SOLUTION


def mine(exercise: Exercise, root: Path | None = None) -> Path:
    return (root or MY_DIR) / exercise.relative


def mistakes(exercise: Exercise) -> list[Path]:
    """Known wrong answers, each a diff against the solution (``practice.answers`` applies
    it): the check must reject each with its own hint."""
    return sorted((folder(exercise) / MISTAKES).glob("*.diff"))


def alternatives(exercise: Exercise) -> list[Path]:
    """Right answers written another way than the reference solution, as diffs: the check must
    pass each (a check that rejects a right answer teaches distrust)."""
    return sorted((folder(exercise) / ALTERNATIVES).glob("*.diff"))


def expected_file(exercise: Exercise) -> Path:
    return folder(exercise) / EXPECTED


def expected(exercise: Exercise) -> list[Observation]:
    """What Spark emits for each scenario, as recorded from the reference solution."""
    data = json.loads(expected_file(exercise).read_text())
    return [Observation.from_json(item) for item in data["scenarios"]]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def untouched(exercise: Exercise, path: Path) -> bool:
    """The learner's file is still the pristine one: not started."""
    return path.exists() and path.read_bytes() == pristine(exercise).read_bytes()
