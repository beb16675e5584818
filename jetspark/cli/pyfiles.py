"""A zip of jetspark and its pure-Python dependencies, for `spark-submit --py-files`.

On a cluster the executors' Python may not have jetspark installed; Spark puts `--py-files` zips
on their `sys.path`. The zip holds the packages `jetspark`, `attr`, `attrs` and `cloudpickle`
(compiled files left out), so a plain Python with pyspark is enough on the executors.
"""

from __future__ import annotations

import importlib
import zipfile
from pathlib import Path

PACKAGES = ("jetspark", "attr", "attrs", "cloudpickle")


def build_zip(target: Path, packages: tuple[str, ...] = PACKAGES) -> Path:
    """Write the zip to `target` and return it."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in packages:
            module = importlib.import_module(name)
            assert module.__file__ is not None
            root = Path(module.__file__).parent
            for path in sorted(root.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                    archive.write(path, Path(name) / path.relative_to(root))
    return target
