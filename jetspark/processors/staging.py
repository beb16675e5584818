"""How sinks that write files learn where to write: the runner's output staging.

A runner that commits output (the Spark runner; the local runner for jobs without a processing
guarantee) puts an `OutputStaging` in `ProcessorContext.attributes[STAGING_ATTRIBUTE]`. A sink
asks it for the path of each file it writes; the file becomes visible under its final name only
when the job succeeds. Without a staging object a sink writes its files in place.
"""

from __future__ import annotations

from typing import Protocol

from jetspark.core.context import STAGING_ATTRIBUTE  # every attribute key is declared there

__all__ = ["STAGING_ATTRIBUTE", "OutputStaging"]


class OutputStaging(Protocol):
    def staged_path(self, directory: str, name: str) -> str:
        """Where to write the file that is published as `<directory>/<name>` if the job succeeds.

        Raises `FileNotFoundError` when the job's staging area is gone (the job was cancelled or
        has ended): nothing written after that may become output.
        """
        ...
