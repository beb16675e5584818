"""The errors jetspark raises, so that callers can tell a bad DAG from a failed job."""

from __future__ import annotations

import os


class JetsparkError(Exception):
    """Base of every error jetspark raises on its own account."""


class DagValidationError(JetsparkError, ValueError):
    """The DAG or its job config is malformed; raised at build or submit time, before any work."""


class ProcessorContractError(JetsparkError):
    """A processor broke a rule of the `Processor` contract (for example a re-offer of a new item)."""


def method_name(owner: object, method: str | None = None) -> str:
    """`Class.method` for a processor and a method name, or for a bound method or function alone."""
    if method is not None:
        return f"{type(owner).__qualname__}.{method}"
    bound_to = getattr(owner, "__self__", None)
    name = getattr(owner, "__name__", None)
    if bound_to is not None and name is not None:
        return f"{type(bound_to).__qualname__}.{name}"
    return getattr(owner, "__qualname__", None) or repr(owner)


def not_a_bool(
    owner: object,
    method: str | None,
    result: object,
    meaning: str = "return True when done, False to be called again with the same input",
) -> ProcessorContractError:
    """The error for a contract method that returned something other than True or False.

    A None (a forgotten `return`) would otherwise read as False: the engine would call the method
    again with the same item forever, and the job would never end."""
    shown = "None (a forgotten return?)" if result is None else f"{result!r} ({type(result).__name__})"
    name = method_name(owner, method)
    return ProcessorContractError(
        f"{name}() returned {shown}, not True or False: {meaning}{_defined_at(owner, method, name)}"
    )


def _defined_at(owner: object, method: str | None, name: str) -> str:
    """` (Class.method is at job.py:7)` for the method's code, so that the message points at the
    method that forgot its return rather than at the line that ran the job; '' if it has no
    Python code."""
    function = getattr(type(owner), method, None) if method is not None else owner
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    if code is None:
        return ""
    path = code.co_filename
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        relative = path
    shown = path if relative.startswith("..") else relative
    return f" ({name} is at {shown}:{code.co_firstlineno})"


class PartitioningError(JetsparkError):
    """A partitioned edge could not route an item: its key function or partitioner raised. The
    message names the edge, the function and the item; the original error is the cause."""


class RestartableError(JetsparkError):
    """Raised by a processor to ask for a job restart instead of a failure: from the last snapshot,
    or from the beginning in a job without a processing guarantee (the runners' `max_restarts`
    bound how often)."""


class PermanentError(JetsparkError):
    """Raised by a processor for a failure that running again cannot mend (a statement the
    database refuses, a value its table cannot take): the job fails at once on every runner. A
    plain exception does too on the local runner; on Spark it makes an epoch run again (up to
    `max_restarts`), since most failures there are the executor's, not the job's."""


class TopologyChangedError(RestartableError):
    """The members a job runs on changed under it (Jet's `TopologyChangedException`, one of its
    restartable exceptions): a processor that finds so raises it, and the job restarts."""


class JobCancelledError(JetsparkError):
    """The job was cancelled before it completed."""


class JobSuspendedError(JetsparkError):
    """The job was suspended: what the suppliers of the suspended execution get in
    `ProcessorSupplier.close(error)` (as Jet's suspend request), so that they can tell a
    suspension, after which the job resumes, from a completion (`error` None)."""


class JobFailedError(JetsparkError):
    """A processor failed; carries the vertex name and processor index, chained to the original error."""

    def __init__(self, message: str, vertex: str | None = None, processor_index: int | None = None) -> None:
        super().__init__(message)
        self.vertex = vertex
        self.processor_index = processor_index


class BadRecordError(JobFailedError):
    """A source met a record it cannot read, under `errors="fail"`: the input holds it, so a run
    again from a snapshot meets it again. The Spark runner fails the job at once instead of
    running the epoch again (as for a broken contract)."""


class QuiescenceError(JobFailedError):
    """Nothing made progress for the configured time while items were still pending (or a
    processor with all its input never completed): the job would hang, so it fails, with every
    processor's watermarks and pending counts in the message."""


class JobAlreadyRunningError(JetsparkError):
    """A job was submitted while another driver runs it (same name under the same checkpoint
    root): two drivers would take over each other's snapshots and transactions."""


class JobTimeoutError(JetsparkError, TimeoutError):
    """`Job.join(timeout)` ran out of time; the job is still running."""
