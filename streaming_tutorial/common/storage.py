"""What the Python side does when the course's storage is remote (``--storage hdfs://...``).

Spark reaches every Hadoop URI; this Python process reaches only its own disk. So with a
remote storage root (see common/paths.py) the steps that Python does on local folders say
what they cannot do instead of failing obscurely: ``--reset`` deletes through Hadoop's
FileSystem in the driver's JVM (or names the command to run), the checkpoint description
says it was not inspected (infra.checkpoints.describe), and a lesson whose input Python would
write refuses with advice.
"""

from __future__ import annotations

from pathlib import Path

from common import paths
from infra.errors import CourseError


def delete(spark, path: Path) -> bool:
    """Delete ``paths.uri(path)`` through the driver JVM's Hadoop FileSystem; True if it existed.

    A store the JVM cannot reach (no connector for its scheme, no credentials) is a
    CourseError that names the command to run instead.
    """
    address = paths.uri(path)
    try:
        jvm_path = spark._jvm.org.apache.hadoop.fs.Path(address)
        return bool(jvm_path.getFileSystem(spark._jsc.hadoopConfiguration()).delete(jvm_path, True))
    except Exception as error:  # py4j's error carries the JVM's reason; keep its first line
        raise CourseError(delete_advice(address, error)) from error


def delete_advice(address: str, error: BaseException) -> str:
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return (
        f"--reset could not delete {address} through Spark ({reason}). Delete it yourself, e.g. "
        f"'hdfs dfs -rm -r -f {address}' (or your object store's own tool), then run the lesson "
        "again without --reset."
    )


def require_local_input(what: str, folder: Path, *, advice: str = "") -> None:
    """Refuse, with advice, a lesson step in which Python writes files that Spark then reads
    at ``folder``, when Spark reads that folder on remote storage, where Python cannot write."""
    if paths.is_remote(folder):
        raise CourseError(local_input_advice(what, folder, advice))


def local_input_advice(what: str, folder: Path, advice: str = "") -> str:
    return (
        f"{what} writes its files into {paths.display(folder)} on this machine, but with the "
        f"storage {paths.REMOTE_ROOT} Spark reads {paths.uri(folder)}, which those files never "
        f"reach. "
        + (
            advice
            or "Run this lesson with local storage (no --storage, or a local folder or a file:/// "
            "mount), or use the Kafka lessons (08, 14, 17 --source kafka): their input goes "
            "through the broker."
        )
    )


def simulator_advice(folder: Path) -> str:
    """What to do instead of letting a file simulator write where Spark does not look."""
    return (
        "Put the input there yourself (run the simulator with local storage, then copy its files: "
        f"'hdfs dfs -put {paths.display(folder)}/* {paths.uri(folder)}/' or your store's own "
        "tool), and run the lesson with --no-simulator (and --available-now to read them once); "
        "or use the Kafka lessons (08, 14, 17 --source kafka): their input goes through the broker."
    )
