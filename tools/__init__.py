"""The course's tooling that no lesson imports: run from the project root as ``python -m tools.X``.

- ``class_archive``: trains the driver JVM's class-data archive (``course.py test`` trains it
  before the suite, ``course.py tour`` after the tour); ``infra/jvm.py`` maps it when present.
- ``archive_training``: the Spark run whose loaded classes the archive keeps.
- ``cluster``: a Spark standalone cluster on this machine (``python course.py cluster``).

The tools use the lessons' shared packages (``common``, ``infra``), so importing this package
puts ``streaming_tutorial/`` on ``sys.path``.
"""

import sys
from pathlib import Path

LESSONS_DIR = Path(__file__).resolve().parent.parent / "streaming_tutorial"
if str(LESSONS_DIR) not in sys.path:
    sys.path.insert(0, str(LESSONS_DIR))
