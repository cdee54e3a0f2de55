"""The learner's progress: which exercises passed, which are failing, how many hints were seen.

Kept in ``my_exercises/.progress.json`` (git-ignored, like the learner's files). Every check
rewrites the entries it checked; an id the catalog no longer has (an exercise renamed by a
``git pull``) is ignored, and an entry whose file changed since its check is shown as such, so
a stale file never strands a learner: the next check rebuilds it.
"""

from __future__ import annotations

import json
from pathlib import Path

from practice import catalog
from practice.checking import NOT_STARTED

VERSION = 1


def progress_file(root: Path | None = None) -> Path:
    return (root or catalog.MY_DIR) / ".progress.json"


def load(root: Path | None = None) -> dict:
    """{exercise id: {"status", "digest", "hints"}}; empty when missing or unreadable."""
    path = progress_file(root)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return {}
    entries = data.get("exercises", {})
    return {key: value for key, value in entries.items() if isinstance(value, dict)}


def save(entries: dict, root: Path | None = None) -> None:
    path = progress_file(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"version": VERSION, "exercises": entries}, indent=1) + "\n")
    temporary.replace(path)


def record_verdict(verdict, path: Path, root: Path | None = None) -> None:
    entries = load(root)
    entry = entries.setdefault(verdict.exercise.id, {})
    entry["status"] = verdict.status
    entry["digest"] = catalog.digest(path) if path.exists() else ""
    save(entries, root)


def next_hint_level(exercise_id: str, root: Path | None = None) -> int:
    """Count one more hint seen for this exercise; returns the new count."""
    entries = load(root)
    entry = entries.setdefault(exercise_id, {"status": NOT_STARTED})
    entry["hints"] = int(entry.get("hints", 0)) + 1
    save(entries, root)
    return entry["hints"]


def status_of(exercise, root: Path | None = None, entries: dict | None = None) -> tuple[str, bool]:
    """(status, stale): stale when the file changed since its last check."""
    path = catalog.mine(exercise, root)
    if not path.exists() or catalog.untouched(exercise, path):
        return NOT_STARTED, False
    entry = (load(root) if entries is None else entries).get(exercise.id)
    if not entry:
        return "not checked", False
    return entry.get("status", "not checked"), entry.get("digest") != catalog.digest(path)


def ever_passed(exercise, root: Path | None = None) -> bool:
    status, _ = status_of(exercise, root)
    return status == "passed"


def next_unpassed(exercises: list, after=None, root: Path | None = None):
    """The first exercise not passed yet, in catalog order, starting after ``after`` (and
    wrapping round to the first); None when every exercise has passed."""
    order = list(exercises)
    if after is not None and after in order:
        index = order.index(after)
        order = order[index + 1 :] + order[: index + 1]
    entries = load(root)
    for exercise in order:
        if status_of(exercise, root, entries)[0] != "passed":
            return exercise
    return None
