"""jetspark: Hazelcast Jet's processor model in Python, run on Apache Spark or in-process.

The package root re-exports the public contract of `jetspark.core`, so `from jetspark import DAG`
and `from jetspark.core import DAG` name the same object.
"""

import jetspark._command  # noqa: F401  (first: Ctrl-C while the `jetspark` command loads)
from jetspark.core import *  # noqa: F403
from jetspark.core import __all__ as _core_all

__all__ = list(_core_all)
