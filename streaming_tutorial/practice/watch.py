"""``python course.py exercises watch``: check the current exercise each time it is saved.

One SparkSession stays warm for the whole watch, so a check costs only its micro-batches. Two
threads feed one queue: watchfiles reports saves in ``my_exercises/`` (it polls where file
events do not arrive: on WSL2 by itself, and here on network folders too), and readchar reads
the keys. The main thread takes one event at a time, so a check never overlaps another, and
every query a check started is stopped before the next one.
"""

from __future__ import annotations

import queue
import sys
import threading
from pathlib import Path
from typing import Callable

from practice import catalog, progress
from practice.checking import PASSED, Verdict, check
from practice.session import WORK_DIR, exercise_session, workdir_for

KEYS = "h hint · n next · l list · r reset · s solution (after a pass) · q quit"
# File systems on which inotify sees no change made by another machine (or by Windows): poll.
NETWORK_FILE_SYSTEMS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "drvfs", "fuse.sshfs", "afs"}
POLL_DELAY_MS = 300
DEBOUNCE_MS = 50  # watchfiles waits this long for more changes of one save (its default: 1.6 s)


def file_system_of(path: Path) -> str:
    """The type of the mount that holds ``path``, from /proc/mounts ('' where unknown)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return ""
    best, kind = "", ""
    target = str(path.resolve())
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def must_poll(path: Path) -> bool | None:
    """True on a network folder; None lets watchfiles decide (it polls on WSL2 itself)."""
    if file_system_of(path) in NETWORK_FILE_SYSTEMS:
        return True
    return None


class Watcher:
    """The watch loop's state: the current exercise, and what each event does."""

    def __init__(
        self,
        spark,
        exercises: list,
        root: Path,
        current=None,
        *,
        ask: Callable[[str], bool] | None = None,
        on_verdict: Callable[[Verdict], None] | None = None,
        clear: bool = True,
        work_root: Path = WORK_DIR,
    ) -> None:
        self.spark = spark
        self.exercises = exercises
        self.root = root
        self.current = current or self.first_unfinished()
        self.ask = ask or ask_key
        self.on_verdict = on_verdict
        self.clear = clear
        self.work_root = work_root  # each check's input files and checkpoints
        self.last: Verdict | None = None

    def first_unfinished(self, after=None):
        order = self.exercises
        if after is not None:
            index = order.index(after)
            order = order[index + 1 :] + order[: index + 1]
        for exercise in order:
            if progress.status_of(exercise, self.root)[0] != PASSED:
                return exercise
        return order[0]

    def path(self, exercise=None) -> Path:
        return catalog.mine(exercise or self.current, self.root)

    def show_header(self) -> None:
        from practice.cli import console, display

        if self.clear and console.is_terminal:
            console.clear()
        exercise = self.current
        console.print(
            f"[bold]{exercise.id} {exercise.title}[/bold] ({exercise.kind}; practises "
            f"{exercise.practises})\nEdit {display(self.path())} and save: it is checked."
        )
        console.print(f"[dim]{KEYS}[/dim]")

    def check_now(self) -> Verdict:
        from practice.cli import console, show_next, show_passed, show_verdict

        self.show_header()
        console.print("[dim]Checking...[/dim]")
        exercise = self.current
        workdir = workdir_for(exercise.id, self.work_root)
        verdict = check(self.spark, exercise, self.path(), workdir)
        self.stop_queries()
        progress.record_verdict(verdict, self.path(), self.root)
        show_verdict(verdict, self.root)
        if verdict.passed:
            # Why it works, the reference solution (s), and the next exercise (n).
            show_passed(exercise, in_watch=True)
            show_next(self.exercises, exercise, self.root, in_watch=True)
        self.last = verdict
        if self.on_verdict:
            self.on_verdict(verdict)
        return verdict

    def stop_queries(self) -> None:
        """Stop any query the learner's code left running (a check stops its own)."""
        for query in self.spark.streams.active:
            query.stop()

    def on_saved(self, changed: set[Path]) -> None:
        """A save: check the current exercise, or the exercise whose file was saved."""
        for exercise in self.exercises:
            if self.path(exercise).resolve() in changed:
                self.current = exercise
                self.check_now()
                return

    def on_key(self, key: str) -> bool:
        """Handle a key; False to quit."""
        from practice.cli import console, hint, show_list, show_solution

        key = key.lower()
        if key == "q":
            return False
        if key == "h":
            hint(self.current, self.root, another="press h again")
        elif key == "n":
            self.current = self.first_unfinished(after=self.current)
            self.show_header()
        elif key == "l":
            show_list(self.exercises, self.root)
        elif key == "r":
            self.reset()
        elif key == "s":
            show_solution(self.current, self.root)
        else:
            console.print(f"[dim]{KEYS}[/dim]")
        return True

    def reset(self) -> None:
        from practice.cli import console

        target = self.path()
        if not self.ask(
            f"Reset {self.current.id} to the pristine file (your edits are lost)? [y/N] "
        ):
            console.print("Kept your file.")
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(catalog.pristine(self.current).read_bytes())
        console.print(f"{self.current.id} is back to the pristine file.")


def ask_key(question: str) -> bool:
    """Ask a yes/no question; only y means yes."""
    import readchar

    from practice.cli import console

    console.print(question, end="")
    answer = readchar.readkey()
    console.print(answer)
    return answer.lower() == "y"


class QueueAsker:
    """In the watch loop the key thread owns the keyboard: a question takes the next key from
    the event queue; saves that arrive meanwhile are checked after the answer."""

    def __init__(self, events: queue.Queue) -> None:
        self.events = events

    def __call__(self, question: str) -> bool:
        from practice.cli import console

        console.print(question, end="")
        held = []
        while True:
            kind, value = self.events.get()
            if kind == "key":
                break
            held.append((kind, value))
        for event in held:
            self.events.put(event)
        console.print(value)
        return value.lower() == "y"


def watch_saves(root: Path, events: queue.Queue, stop: threading.Event) -> None:
    import watchfiles

    for changes in watchfiles.watch(
        root,
        stop_event=stop,
        force_polling=must_poll(root),
        poll_delay_ms=POLL_DELAY_MS,
        debounce=DEBOUNCE_MS,
        step=10,
        watch_filter=watchfiles.PythonFilter(),
        raise_interrupt=False,
    ):
        events.put(("saved", {Path(path).resolve() for _, path in changes}))


def read_keys(events: queue.Queue, stop: threading.Event) -> None:
    import readchar

    while not stop.is_set():
        try:
            key = readchar.readkey()
        except KeyboardInterrupt:
            key = "q"
        events.put(("key", key))
        if key.lower() == "q":
            return


def watch(exercises: list, first=None, root: Path | None = None) -> int:
    from practice.cli import console

    root = root or catalog.MY_DIR
    if not root.exists():
        console.print("There is no my_exercises/ yet: python course.py exercises start")
        return 1
    console.print("[dim]Starting Spark (once for the whole watch)...[/dim]")
    events: queue.Queue = queue.Queue()
    watcher = Watcher(exercise_session(), exercises, root, first, ask=QueueAsker(events))
    stop = threading.Event()
    threading.Thread(target=watch_saves, args=(root, events, stop), daemon=True).start()
    if sys.stdin.isatty():
        threading.Thread(target=read_keys, args=(events, stop), daemon=True).start()
    watcher.check_now()
    try:
        while True:
            kind, value = events.get()
            if kind == "key" and not watcher.on_key(value):
                break
            if kind == "saved":
                watcher.on_saved(value)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        watcher.stop_queries()
    console.print("Bye: python course.py exercises shows where you are.")
    return 0
