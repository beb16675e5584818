"""Finding or starting the SparkSession a job runs on, after checking that Java is there.

Order: a running session (inside `spark-submit`, a notebook, or a test fixture) is reused; under
`spark-submit` without one yet, the session `spark-submit` configured is created; otherwise an
embedded session is started on `JETSPARK_MASTER` (default `local[*]`) with quiet logs (WARN), no
web UI (unless jetspark's own web UI is asked for, `JETSPARK_UI`: then its job pages link to
Spark's) and no console progress bars, and workers running this Python (`PYSPARK_PYTHON`).
Sessions jetspark creates log at WARN (`JETSPARK_SPARK_LOG_LEVEL` to change).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jetspark.core.errors import JetsparkError

# `JETSPARK_UI` (set by `jetspark run --ui`): embedded sessions then start Spark's web UI too.
from jetspark.environment import MASTER_ENV as MASTER_ENV
from jetspark.environment import SPARK_LOG_LEVEL_ENV as LOG_LEVEL_ENV
from jetspark.environment import UI_ENV as UI_ENV
from jetspark.log_level import executor_env_conf

MIN_JAVA = 17

_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# jetspark re-raises a failed task as JobFailedError: no second copy of its traceback in the log.
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = fatal
# TaskSetManager stays at WARN: its `Lost task ...` line is the one copy of a failed task's traceback.
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
# a cancelled job's tasks (Ctrl-C, cancel()): "Incomplete task interrupted" per task is noise
logger.pyrunner.name = org.apache.spark.api.python.PythonRunner
logger.pyrunner.level = error
"""


class JavaNotFoundError(JetsparkError):
    """Spark needs Java and none (or too old a one) was found."""


def java_executable() -> str | None:
    """`$JAVA_HOME/bin/java` if JAVA_HOME is set, else `java` on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


_INSTALL_HINT = (
    "Install Java 17: `sudo apt-get install openjdk-17-jre-headless` (Debian/Ubuntu), "
    "`sudo dnf install java-17-openjdk-headless` (Fedora), `brew install openjdk@17` (macOS), or "
    "https://adoptium.net; then put `java` on PATH or set JAVA_HOME. Without Spark, run the job in "
    "process: `jetspark run --local job.py` (or JETSPARK_RUNNER=local)."
)


def check_java() -> str:
    """Return the java executable Spark will use, or raise JavaNotFoundError saying how to install it."""
    java = java_executable()
    if java is None:
        where = (
            f"JAVA_HOME={os.environ['JAVA_HOME']!r} has no bin/java"
            if os.environ.get("JAVA_HOME")
            else ("no `java` on PATH and JAVA_HOME is not set")
        )
        raise JavaNotFoundError(f"Spark needs Java {MIN_JAVA} or newer, but {where}. {_INSTALL_HINT}")
    try:
        probe = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise JavaNotFoundError(
            f"Spark needs Java {MIN_JAVA}; running {java} -version failed: {error}. {_INSTALL_HINT}"
        ) from error
    match = re.search(r'version "(\d+)(?:\.(\d+))?', probe.stderr + probe.stdout)
    if match is not None:
        major = int(match.group(1))
        if major == 1 and match.group(2):  # "1.8.0" is Java 8
            major = int(match.group(2))
        if major < MIN_JAVA:
            raise JavaNotFoundError(
                f"Spark needs Java {MIN_JAVA} or newer, but {java} is Java {major}. {_INSTALL_HINT}"
            )
    return java


class SparkMasterError(JetsparkError, ValueError):
    """The Spark master URL is malformed, or its standalone master cannot be reached."""


#: Master URLs Spark takes (https://spark.apache.org/docs/latest/submitting-applications.html#master-urls).
_MASTER_FORMS = (
    r"local",
    r"local\[(\*|[1-9]\d*)(,[1-9]\d*)?\]",
    r"local-cluster\[[1-9]\d*,\s*[1-9]\d*,\s*[1-9]\d*\]",
    r"spark://[^/\s]+",
    r"yarn",
    r"k8s://\S+",
    r"mesos://\S+",
)
_MASTER = re.compile("|".join(f"(?:{form})" for form in _MASTER_FORMS))
_MASTER_EXAMPLES = (
    "local[*], local[4], local-cluster[2,1,1024], spark://host:7077, yarn, k8s://https://host:443"
)
#: Seconds to wait for a standalone master's port to accept a connection.
CONNECT_TIMEOUT = 3.0


def check_master(master: str) -> None:
    """Raise `SparkMasterError` (one line naming the master and the cause) when `master` is not a
    Spark master URL, or is a standalone `spark://` master none of whose host:port pairs accepts a
    TCP connection within `CONNECT_TIMEOUT` s; Spark itself would retry for two minutes."""
    master = master.strip()
    if not _MASTER.fullmatch(master):
        raise SparkMasterError(
            f"Spark master {master!r} is not a master URL; expected one of {_MASTER_EXAMPLES}"
        )
    if master.startswith("spark://"):
        _check_reachable(master)


def _check_reachable(master: str) -> None:
    causes = []
    for address in master[len("spark://") :].split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise SparkMasterError(
                f"Spark master {master!r}: {address!r} is not host:port (e.g. spark://host:7077)"
            )
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT):
                return
        except OSError as error:
            causes.append(f"{address}: {error.strerror or error}")
    raise SparkMasterError(
        f"Spark master {master!r} cannot be reached ({'; '.join(causes)}); is the standalone master running "
        "there? (`jetspark run --local` runs without Spark)"
    )


def under_spark_submit() -> bool:
    """True inside `spark-submit` (or the pyspark shell): a JVM gateway is already running."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def log4j_config_file() -> str:
    """A log4j2 configuration for embedded sessions: WARN, and no duplicated task tracebacks."""
    path = Path(tempfile.gettempdir()) / "jetspark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        tmp.replace(path)
    return str(path)


def embedded_conf(master: str) -> dict[str, str]:
    """Spark settings of an embedded session (jetspark's own defaults; tests use them too)."""
    log4j = f"-Dlog4j.configurationFile=file:{log4j_config_file()}"
    return {
        "spark.master": master,
        "spark.app.name": "jetspark",
        "spark.ui.enabled": "true" if os.environ.get(UI_ENV) else "false",
        "spark.ui.showConsoleProgress": "false",
        # Kill a cancelled or losing task's Python worker as soon as Spark sees the task killed
        # (default 2s): a cancelled job's processors stop about 0.5 s after cancel(), not 4 s.
        "spark.python.task.killTimeout": "0s",
        # Spark deletes a finished job's shuffle files when the driver's JVM collects its shuffle
        # dependency, and forces a full collection only this often (default 30 min): an endless
        # job in short epochs leaves about half a file per epoch in the scratch space until then.
        "spark.cleaner.periodicGC.interval": "5min",
        "spark.driver.extraJavaOptions": log4j,
        "spark.executor.extraJavaOptions": log4j,
        **executor_env_conf(),  # `--log-level` in the Python workers of executors
    }


def prepare_environment(master: str) -> None:
    """Environment an embedded session needs: this Python on workers, with the job file's
    directory on their path; SPARK_HOME for local-cluster."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _job_directory_on_workers_path()
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if master.startswith("local-cluster") and "SPARK_HOME" not in os.environ:
        os.environ["SPARK_HOME"] = pyspark_home()


def _job_directory_on_workers_path() -> None:
    """A job file run from another directory (`jetspark run project/job.py`, `python
    project/job.py`) may import a module beside it: the driver finds it (Python puts the file's
    directory first on `sys.path`), the Python workers of an embedded Spark did not, so unpickling
    the job's suppliers failed in every task. They inherit the environment of the JVM started from
    here, so its `PYTHONPATH` gets the directory."""
    script = sys.argv[0] if sys.argv else ""
    if not script.endswith(".py") or not os.path.isfile(script):
        return
    directory = os.path.dirname(os.path.abspath(script))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if directory not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([*paths, directory])


def pyspark_home() -> str:
    """The pyspark package directory: a Spark home (bin/spark-submit, jars/) in pip's pyspark."""
    import pyspark

    return str(Path(pyspark.__file__).parent)


def session_running() -> bool:
    """A SparkContext is running in this process (so `get_session` starts nothing)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def get_session(master: str | None = None, extra_conf: dict[str, str] | None = None) -> Any:
    """The running SparkSession, or a new one (see the module docstring)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate()
    if under_spark_submit() and master is None:
        session = SparkSession.builder.appName("jetspark").getOrCreate()
        session.sparkContext.setLogLevel(os.environ.get(LOG_LEVEL_ENV, "WARN"))
        return session
    master = master or os.environ.get(MASTER_ENV) or "local[*]"
    check_master(master)
    check_java()
    prepare_environment(master)
    builder = SparkSession.builder
    for key, value in {**embedded_conf(master), **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except KeyboardInterrupt:
        # Ctrl-C while Spark starts: the JVM being started ignores SIGINT and would go on, print a
        # Java trace over the terminal and hold it; it has nothing to save yet, so it is killed.
        _kill_child_processes()
        raise
    session.sparkContext.setLogLevel(os.environ.get(LOG_LEVEL_ENV, "WARN"))
    return session


#: What the command line of the JVM pyspark starts contains (spark-submit's main class).
_SPARK_JVM_MARK = b"org.apache.spark.deploy.SparkSubmit"


def _kill_child_processes() -> None:
    """Kill the Spark JVMs among this process's children (on Linux, read from /proc; elsewhere
    nothing is done). Other children (a test's database server, say) are left alone."""
    me = os.getpid()
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != me or _SPARK_JVM_MARK not in (entry.parent / "cmdline").read_bytes():
                continue
        except (OSError, IndexError, ValueError):
            continue
        with contextlib.suppress(OSError):
            os.kill(int(entry.parent.name), signal.SIGKILL)


_quieted: set[int] = set()


def log_task_failures_once(sc: Any) -> None:
    """In local mode, the executor's ERROR log of a failed task repeats, word for word, what the
    driver's `TaskSetManager` logs as the lost task: turn the executor's off (as jetspark's own
    log4j settings do), so that a session jetspark did not configure (a notebook, plain
    `spark-submit`) shows a failed task's traceback once. Other failures still show, in the lost
    task's warning. Done once per SparkContext; a cluster's executors log on their own machines."""
    if id(sc) in _quieted or not str(sc.master).startswith("local"):
        return
    _quieted.add(id(sc))
    try:
        jvm = sc._jvm
        level = jvm.org.apache.logging.log4j.Level.FATAL
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.executor.Executor", level
        )
    except Exception:  # another logging backend: leave it as it is
        pass


@contextlib.contextmanager
def call_site(sc: Any, text: str) -> Iterator[None]:
    """Name the RDDs and Spark stages created inside (the Spark UI shows `text` instead of a
    Python line). PySpark sets its own call site only when none is set, which this marks."""
    try:
        from pyspark.traceback_utils import SCCallSiteSync
    except ImportError:  # pragma: no cover - other pyspark layouts: just no names
        yield
        return
    sc._jsc.setCallSite(text)
    SCCallSiteSync._spark_stack_depth += 1
    try:
        yield
    finally:
        SCCallSiteSync._spark_stack_depth -= 1
        sc._jsc.setCallSite(None)
