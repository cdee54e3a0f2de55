"""Shipped answers kept as their difference from the reference solution.

An exercise's known mistakes and other right answers are whole files a learner could write,
but each differs from the solution in a few lines: ``mistakes/<name>.diff`` and
``alternatives/<name>.diff`` in the exercise's folder hold only those lines (a unified diff),
so a reader sees the mistake at a glance and a change to the solution is made once.

    python -m practice.answers store 09.1 mistakes FILE.py   # keep FILE as a mistake's diff
    python -m practice.answers show 09.1 inner_join          # the whole answer, to stdout
    python -m practice.answers check [ID ...]                # every diff still applies

(run from streaming_tutorial/). A diff that no longer applies after the solution changed is an
error naming the answer and the line: rewrite the answer from ``show`` of the old solution
(git) and ``store`` it again.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

from practice import catalog

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffError(ValueError):
    """A stored diff that does not apply to the solution it was made from."""


def difference(original: str, changed: str, label: str) -> str:
    """A unified diff that turns ``original`` into ``changed`` (3 lines of context). Both end
    with a newline, as every formatted Python file does."""
    lines = difflib.unified_diff(
        with_last_newline(original).splitlines(keepends=True),
        with_last_newline(changed).splitlines(keepends=True),
        fromfile=f"solution.py ({label})",
        tofile=label,
    )
    return "".join(lines)


def with_last_newline(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


def applied(original: str, diff: str, label: str = "the diff") -> str:
    """``original`` with ``diff`` applied. Every context and removed line must be where the diff
    says: a diff made from another version of the file raises DiffError."""
    source = with_last_newline(original).splitlines(keepends=True)
    result: list[str] = []
    position = 0  # the next line of ``source`` not yet copied
    lines = diff.splitlines(keepends=True)
    index = 0
    while index < len(lines) and not lines[index].startswith("@@"):
        index += 1  # the ---/+++ header
    while index < len(lines):
        match = HUNK.match(lines[index])
        if not match:
            raise DiffError(f"{label}: line {index + 1} is not a hunk header: {lines[index]!r}")
        start = int(match.group(1)) - (0 if match.group(2) == "0" else 1)
        if start < position:
            raise DiffError(f"{label}: hunks overlap at line {start + 1}")
        result.extend(source[position:start])
        position = start
        index += 1
        while index < len(lines) and not lines[index].startswith("@@"):
            line = lines[index]
            # An editor that strips trailing spaces leaves a blank context line as "\n".
            tag, text = (" ", line) if line == "\n" else (line[:1], line[1:])
            if tag in " -":
                expected = source[position] if position < len(source) else None
                if expected is None or expected.rstrip("\n") != text.rstrip("\n"):
                    raise DiffError(
                        f"{label}: line {position + 1} of the solution is {expected!r}, "
                        f"the diff expects {text!r}: the solution changed since the diff was made"
                    )
                position += 1
                if tag == " ":
                    result.append(expected)
            elif tag == "+":
                result.append(text)
            else:
                raise DiffError(f"{label}: line {index + 1} starts with {tag!r}")
            index += 1
    result.extend(source[position:])
    return "".join(result)


def whole_file(exercise, diff_file: Path) -> str:
    """The answer ``diff_file`` holds, as the whole file a learner would have written."""
    solution = catalog.solution(exercise).read_text(encoding="utf-8")
    label = f"{exercise.id} {diff_file.parent.name}/{diff_file.name}"
    return applied(solution, diff_file.read_text(encoding="utf-8"), label)


def written(exercise, diff_file: Path, folder: Path) -> Path:
    """The answer written out as ``folder/<name>.py``, to be checked like a learner's file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{diff_file.stem}.py"
    path.write_text(whole_file(exercise, diff_file), encoding="utf-8")
    return path


def store(exercise, kind: str, answer: Path) -> Path:
    """Keep the file ``answer`` as ``<kind>/<its name>.diff`` in the exercise's folder."""
    if kind not in (catalog.MISTAKES, catalog.ALTERNATIVES):
        raise ValueError(f"kind is {catalog.MISTAKES} or {catalog.ALTERNATIVES}, not {kind!r}")
    solution = catalog.solution(exercise).read_text(encoding="utf-8")
    changed = answer.read_text(encoding="utf-8")
    if changed == solution:
        raise ValueError(f"{answer} is the solution itself: nothing to store")
    target = catalog.folder(exercise) / kind / f"{answer.stem}.diff"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(difference(solution, changed, f"{kind}/{answer.stem}"), encoding="utf-8")
    return target


def main(argv: list[str]) -> int:
    exercises = catalog.all_exercises()
    if argv[:1] == ["store"] and len(argv) == 4:
        target = store(catalog.find(exercises, argv[1]), argv[2], Path(argv[3]))
        print(f"wrote {target}")
        return 0
    if argv[:1] == ["show"] and len(argv) == 3:
        exercise = catalog.find(exercises, argv[1])
        files = [*catalog.mistakes(exercise), *catalog.alternatives(exercise)]
        found = [path for path in files if path.stem == argv[2]]
        if not found:
            names = ", ".join(path.stem for path in files)
            print(f"{exercise.id} has no answer {argv[2]!r}; it has {names}", file=sys.stderr)
            return 2
        sys.stdout.write(whole_file(exercise, found[0]))
        return 0
    if argv[:1] == ["check"]:
        wanted = [catalog.find(exercises, name) for name in argv[1:]] or exercises
        problems = 0
        for exercise in wanted:
            for path in [*catalog.mistakes(exercise), *catalog.alternatives(exercise)]:
                try:
                    whole_file(exercise, path)
                except DiffError as error:
                    print(error)
                    problems += 1
        print(f"{problems} diff(s) that no longer apply")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
