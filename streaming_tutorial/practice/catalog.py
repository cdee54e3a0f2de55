"""Where the exercises are, and loading them: the catalog, the learner's files, fresh imports."""

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
SOLUTIONS_DIR = EXERCISES_DIR / "solutions"
CHECKS_DIR = EXERCISES_DIR / "checks"
MISTAKES_DIR = EXERCISES_DIR / "mistakes"
ALTERNATIVES_DIR = EXERCISES_DIR / "alternatives"  # other right answers: each must pass
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
    exercise.lesson = check_file.parent.name
    exercise.stem = check_file.stem
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
        CHECKS_DIR.glob("[0-9][0-9]_*/ex[0-9]*_*.py"),
        key=lambda path: (path.parent.name, int(path.stem.split("_")[0][2:])),
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


def pristine(exercise: Exercise) -> Path:
    return EXERCISES_DIR / exercise.relative


def solution(exercise: Exercise) -> Path:
    return SOLUTIONS_DIR / exercise.relative


def mine(exercise: Exercise, root: Path | None = None) -> Path:
    return (root or MY_DIR) / exercise.relative


def mistakes(exercise: Exercise) -> list[Path]:
    return sorted((MISTAKES_DIR / exercise.lesson / exercise.stem).glob("*.py"))


def alternatives(exercise: Exercise) -> list[Path]:
    """Right answers written another way than the reference solution: the check must pass
    each (a check that rejects a right answer teaches distrust)."""
    return sorted((ALTERNATIVES_DIR / exercise.lesson / exercise.stem).glob("*.py"))


def expected_file(exercise: Exercise) -> Path:
    return exercise.check_file.with_suffix(".json")


def expected(exercise: Exercise) -> list[Observation]:
    """What Spark emits for each scenario, as recorded from the reference solution."""
    data = json.loads(expected_file(exercise).read_text())
    return [Observation.from_json(item) for item in data["scenarios"]]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def untouched(exercise: Exercise, path: Path) -> bool:
    """The learner's file is still the pristine one: not started."""
    return path.exists() and path.read_bytes() == pristine(exercise).read_bytes()
