"""The driver JVM's class-data archive: mapped when the course has trained one, never waited for.

A Spark driver JVM loads some 15,000 classes from pyspark's jars at every start. The JVM can
keep what it loaded in an archive (class-data sharing, JDK 13+) and later JVMs map that file
instead: a session is ready in about 3.5 s instead of 6 on 2 cores (docs/BENCHMARKS.md).
``tools/class_archive.py`` trains the archive (``python course.py test`` before the suite,
``python course.py tour`` after the tour) and puts it in place whole, with one rename. This
module only finds it: a session started before it exists simply loads its classes as usual.

Set ``STREAMING_COURSE_CLASS_ARCHIVE=off`` to run without one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from common import paths
from infra.environment import java_executable

SWITCH = "STREAMING_COURSE_CLASS_ARCHIVE"
OFF = ("off", "0", "false", "no")
# SWITCH=write:<file> makes a session's JVM write its archive to <file> as it exits (training).
WRITE_TO = "write:"
# The JVM says nothing about the archive: a mismatch only means a slower start.
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def archive_path() -> Path | None:
    """Where this JDK + pyspark pair's archive lives, or None without a Java or pyspark."""
    java = java_executable()
    if java is None:
        return None
    try:
        import pyspark
    except ImportError:
        return None
    java = os.path.realpath(java)
    # The archive records the class path, i.e. pyspark's jars folder, and the JDK build.
    key = "|".join(
        [
            java,
            str(os.stat(java).st_mtime_ns),
            pyspark.__version__,
            os.path.dirname(pyspark.__file__),
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return paths.user_cache_dir() / "jvm" / f"spark-{pyspark.__version__}-{digest}.jsa"


def class_archive_options() -> list[str]:
    """The driver JVM's options for the archive: map it if it is there, else none."""
    switch = os.environ.get(SWITCH, "")
    if switch.lower() in OFF:
        return []
    if switch.startswith(WRITE_TO):  # the training run writes a new archive there
        return [f"-XX:ArchiveClassesAtExit={switch[len(WRITE_TO) :]}", *QUIET]
    archive = archive_path()
    if archive is None or not archive.exists():
        return []
    return [f"-XX:SharedArchiveFile={archive}", *QUIET]
