"""jetspark: Hazelcast Jet's processor model in Python, run on Apache Spark or in-process."""

from jetspark.core import *  # noqa: F403
from jetspark.core import __all__ as _core_all  # noqa: F401
