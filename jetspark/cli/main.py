"""`jetspark run`, `jetspark submit`, `jetspark dag` and `jetspark startpoint`.

jetspark run [--local] [--master URL] [--verbose] [--quiet] [--ui ...] [--log-level LEVEL] job.py [job args]
    Run a job file in this process. The job calls `jetspark.api.run(dag)`, which picks the
    runner from the environment this command sets: `--local` runs in process (no Spark, no
    Java); otherwise on an embedded Spark on URL (default `local[*]`).

jetspark submit [--quiet] [--ui ...] [--log-level LEVEL] [spark-submit options] job.py [job args]
    Hand the job file to pyspark's bundled `spark-submit`; everything after job.py goes to the
    job, as with `run`. For a master that is not local, a zip of jetspark and its pure-Python
    dependencies goes along as `--py-files`. (The older form `submit job.py [spark-submit
    options] -- [job args]` is still understood.)

jetspark dag [--format text|dot|mermaid] [--plan [--members N]] job.py [job args]
    Print the DAG the job file builds, without running it: the file runs up to its first
    `jetspark.api.run(dag)`, which hands the DAG back instead of starting a job. With `--plan`,
    print the plan instead, as `JobHandle.explain()` does: stages, each vertex's members, each
    edge's routing, and what pruning left out and why, for the job's `member_count` (else N,
    default 2).

jetspark startpoint set|list|delete ...
    Startpoints of a job (`jetspark.cli.startpoint`).

An error that ends the job file of `run` or `dag` is shown as one line and the user's own frame
(`jetspark.cli.errors`); `--verbose` shows the full traceback. A bad `--master` is refused before
the job file runs.

`run` and `submit` show a progress display on a terminal (not with `--quiet`) and with `--ui`
serve the web UI of the driver's jobs on 127.0.0.1 (`jetspark.web`).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jetspark.cli import startpoint
from jetspark.cli.errors import report
from jetspark.cli.pyfiles import build_zip
from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import DagValidationError, JobCancelledError
from jetspark.environment import (
    PROGRESS_ENV,
    RUNNER_ENV,
    START_OVER_ENV,
    UI_ENV,
    UI_KEEP_ENV,
    DagCaptured,
    WebUIError,
    capturing_dag,
    jobs_submitted,
)
from jetspark.log_level import LEVELS, LOG_LEVEL_ENV, executor_env_conf
from jetspark.planning.explain import explain
from jetspark.planning.pictures import FORMATS, render_dag
from jetspark.runners.preflight import check_shippable
from jetspark.runners.spark.session import (
    MASTER_ENV,
    JavaNotFoundError,
    SparkMasterError,
    check_java,
    check_master,
    log4j_config_file,
    pyspark_home,
)

#: The web UI's default port (`--ui-port`).
DEFAULT_UI_PORT = 8740
#: spark-submit options that take no value; every other option takes one (or `--opt=value`).
SPARK_SUBMIT_FLAGS = frozenset({"--verbose", "-v", "--supervise", "--help", "-h", "--version"})


def _add_watch_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--quiet", action="store_true", help="no progress display on the terminal")
    command.add_argument("--ui", action="store_true", help="serve the web UI of the job (127.0.0.1)")
    command.add_argument(
        "--ui-host",
        default="127.0.0.1",
        help="address the web UI binds to; anything but loopback lets others cancel your jobs",
    )
    command.add_argument(
        "--ui-port", type=int, default=DEFAULT_UI_PORT, help=f"web UI port (default {DEFAULT_UI_PORT})"
    )
    command.add_argument(
        "--ui-keep", action="store_true", help="keep serving the web UI after the job file ends, until Ctrl-C"
    )
    command.add_argument(
        "--start-over",
        action="store_true",
        help="run a job that completed in an earlier run again from the beginning (JobConfig.start_over)",
    )
    command.add_argument(
        "--log-level",
        type=str.upper,
        choices=LEVELS,
        help="level of jetspark's Python logging, processors' loggers included (default: Python's)",
    )


def _add_verbose_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--verbose",
        action="store_true",
        help="on an error, the full traceback (default: one line and your frame)",
    )


#: The options of `jetspark run` (filled by `_parser`): given after the job file, they go to the job.
RUN_OPTIONS: set[str] = set()


def _misplaced_run_options(job_args: Sequence[str]) -> list[str]:
    """jetspark's own `run` options among the job file's arguments (`jetspark run job.py --local`),
    which the job gets instead of jetspark."""
    return [word for word in job_args if word.split("=", 1)[0] in RUN_OPTIONS]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jetspark", description="Run jetspark jobs on Spark or in process.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a job file here (embedded Spark, or --local)")
    run.add_argument(
        "--local", action="store_true", help="run in process with the local runner: no Spark, no Java"
    )
    run.add_argument("--master", help="Spark master URL of the embedded session (default local[*])")
    _add_verbose_option(run)
    _add_watch_options(run)
    RUN_OPTIONS.update(option for option in run._option_string_actions if option.startswith("--"))
    run.add_argument("job", help="the job file, a Python script that calls jetspark.api.run(dag)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the job file")
    submit = commands.add_parser(
        "submit",
        help="spark-submit a job file (options before job.py go to spark-submit, after it to the job)",
    )
    _add_watch_options(submit)
    submit.add_argument("job", nargs="?", help="[spark-submit options] job.py [job args]")
    dag = commands.add_parser("dag", help="print the DAG a job file builds, without running it")
    dag.add_argument("--format", choices=FORMATS, default="text", help="text (default), dot or mermaid")
    dag.add_argument(
        "--plan",
        action="store_true",
        help="print the plan (stages, members, what pruning left out and why) instead of the DAG",
    )
    dag.add_argument(
        "--members",
        type=_positive_int,
        default=2,
        help="with --plan: the member count when the job's JobConfig.member_count is not set (default 2)",
    )
    _add_verbose_option(dag)
    dag.add_argument("job", help="the job file")
    dag.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the job file")
    startpoint.register(commands)
    return parser


def _positive_int(text: str) -> int:
    """An argparse type: an int >= 1, or a one-line error naming the value."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value


def _values_after(option: str) -> int:
    """Words a spark-submit option takes after it: none for its flags and `--opt=value`, else one."""
    return 0 if option in SPARK_SUBMIT_FLAGS or "=" in option else 1


def split_submit(rest: Sequence[str]) -> tuple[list[str], str, list[str]]:
    """`[spark-submit options] job.py [job args]` -> (options, job, job args).

    The job file is the first word that is neither an option nor an option's value, as
    spark-submit itself reads its command line. The older form `job.py [options] -- [job args]`
    is recognised by its `--`. Raises ValueError when there is no job file."""
    words = list(rest)
    options: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            break
        if word.startswith("-"):
            takes = _values_after(word)
            options += words[i : i + 1 + takes]
            i += 1 + takes
            continue
        job, after = word, words[i + 1 :]
        if "--" in after:  # the older form: spark-submit options between job.py and --
            cut = after.index("--")
            return options + after[:cut], job, after[cut + 1 :]
        return options, job, after
    raise ValueError(
        "submit: no job file given (usage: jetspark submit [spark-submit options] job.py [job args])"
    )


def run_job(job: str, args: Sequence[str], local: bool, master: str | None) -> None:
    """Run the job file as `__main__` with `sys.argv = [job, *args]` after setting the environment."""
    os.environ[RUNNER_ENV] = "local" if local else "spark"
    if master is not None:
        os.environ[MASTER_ENV] = master
    _run_file(job, args)


def _run_file(job: str, args: Sequence[str]) -> None:
    path = Path(job)
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    runpy.run_path(str(path), run_name="__main__")


def capture_dag(job: str, args: Sequence[str]) -> DagCaptured:
    """The DAG (and config) the job file passes to its first `jetspark.api.run`; the job is not run.
    Raises ValueError when the file ends without calling it."""
    try:
        with capturing_dag():
            _run_file(job, args)
    except DagCaptured as captured:
        return captured
    raise ValueError(f"{job!r} ended without calling jetspark.api.run(dag): no DAG to show")


def submit_command(rest: Sequence[str], workdir: Path) -> tuple[list[str], dict[str, str]]:
    """The spark-submit command line and environment for `jetspark submit rest...`, where `rest` is
    `[spark-submit options] job.py [job args]` (see `split_submit`)."""
    options, job, job_args = split_submit(rest)
    master = "local[*]"
    for i, option in enumerate(options):
        if option == "--master" and i + 1 < len(options):
            master = options[i + 1]
        elif option.startswith("--master="):
            master = option.split("=", 1)[1]
    env = dict(os.environ)
    env.setdefault("SPARK_HOME", str(pyspark_home()))
    env[RUNNER_ENV] = "spark"
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        env.setdefault("PYSPARK_PYTHON", sys.executable)
    else:
        bundle = str(build_zip(workdir / "jetspark-pyfiles.zip"))
        if "--py-files" in options:
            at = options.index("--py-files") + 1
            options[at] = f"{options[at]},{bundle}"
        else:
            options = ["--py-files", bundle, *options]
    if not any(o.startswith("spark.driver.extraJavaOptions") for o in options):
        # quiet start-up logs (WARN), as for embedded sessions; the user's own setting wins
        log4j = f"-Dlog4j.configurationFile=file:{log4j_config_file()}"
        options = ["--conf", f"spark.driver.extraJavaOptions={log4j}", *options]
    for key, value in executor_env_conf().items():  # `--log-level` in executors' Python workers
        if not any(o.startswith(f"{key}=") for o in options):
            options = ["--conf", f"{key}={value}", *options]
    command = [str(Path(pyspark_home()) / "bin" / "spark-submit"), *options, job, *job_args]
    return command, env


def job_file_problem(job: str) -> str | None:
    """Why `job` cannot be run as a job file (it is missing, a directory, or not valid Python), or None."""
    path = Path(job)
    if path.is_dir():
        scripts = sorted(p.name for p in path.glob("*.py"))
        hint = f", such as {path / scripts[0]}" if len(scripts) == 1 else ""
        if len(scripts) > 1:
            hint = f"; Python files in it: {', '.join(scripts[:5])}{' ...' if len(scripts) > 5 else ''}"
        return (
            f"{job!r} is a directory; expected a Python job file (a script that calls "
            f"jetspark.api.run(dag)){hint}"
        )
    if not path.is_file():
        return f"job file {job!r} not found"
    try:  # here, not in spark-submit's driver after the JVM started: one line naming the spot
        compile(path.read_bytes(), str(path), "exec")
    except SyntaxError as error:
        return f"{job}:{error.lineno}: {type(error).__name__}: {error.msg}"
    except (OSError, ValueError) as error:  # unreadable; null bytes
        return f"job file {job!r} cannot be read as Python: {error}"
    return None


def _watch_environment(args: argparse.Namespace, submitting: bool) -> None:
    """Set what `jetspark.api.run` reads for the progress display and the web UI."""
    if args.quiet:
        os.environ[PROGRESS_ENV] = "off"
    else:  # spark-submit pipes the job's output: decide here whether that ends on a terminal
        os.environ[PROGRESS_ENV] = "always" if submitting and sys.stderr.isatty() else "auto"
    if args.ui:
        if args.ui_host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"jetspark: the web UI listens on {args.ui_host}: anyone who can reach it can see and "
                "cancel your jobs",
                file=sys.stderr,
            )
        os.environ[UI_ENV] = f"{args.ui_host}:{args.ui_port}"
        if args.ui_keep:
            os.environ[UI_KEEP_ENV] = "1"
    if args.start_over:
        os.environ[START_OVER_ENV] = "1"
    if args.log_level:
        os.environ[LOG_LEVEL_ENV] = args.log_level


#: jetspark's own options of `submit` (with how many values each takes), read before spark-submit's.
OWN_SUBMIT_OPTIONS = {
    "--quiet": 0,
    "--ui": 0,
    "--ui-keep": 0,
    "--start-over": 0,
    "--ui-host": 1,
    "--ui-port": 1,
    "--log-level": 1,
    "-h": 0,
    "--help": 0,
}


def _own_options(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split `submit`'s words into jetspark's own options (before the job file) and the rest."""
    own: list[str] = []
    rest: list[str] = []
    words = list(words)
    i = 0
    while i < len(words):
        word = words[i]
        name = word.split("=", 1)[0]
        if name in OWN_SUBMIT_OPTIONS:
            takes = 0 if "=" in word else OWN_SUBMIT_OPTIONS[name]
            own += words[i : i + 1 + takes]
            i += 1 + takes
            continue
        if not word.startswith("-") or word == "--":  # the job file: the rest is spark-submit's or the job's
            return own, rest + words[i:]
        takes = _values_after(word)
        rest += words[i : i + 1 + takes]
        i += 1 + takes
    return own, rest


def _warn_if_not_shippable(dag: DAG, config: JobConfig) -> None:
    """What the Spark runner would refuse at submit (a supplier or key function that does not
    pickle, a guarantee without its checkpoint root): a warning, as the plan may be for `--local`."""
    try:
        check_shippable(dag, config)
    except DagValidationError as error:
        print(f"jetspark: warning: on Spark this job would be refused at submit: {error}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    if words[:1] == ["submit"]:
        own, rest = _own_options(words[1:])
        words = ["submit", *own]
    args = _parser().parse_args(words)
    if args.command == "startpoint":
        return startpoint.run(args)
    if args.command == "submit":
        try:
            _options, args.job, _job_args = split_submit(rest)
        except ValueError as error:
            print(f"jetspark: {error}", file=sys.stderr)
            return 2
    problem = job_file_problem(args.job)
    if problem is not None:
        print(f"jetspark: {problem}", file=sys.stderr)
        return 2
    verbose = getattr(args, "verbose", False)
    if args.command == "dag":
        try:
            captured = capture_dag(args.job, args.args)
        except KeyboardInterrupt:
            print("jetspark: interrupted", file=sys.stderr)
            return 130
        except Exception as error:
            report(error, args.job, verbose)
            return 2 if isinstance(error, ValueError) else 1
        try:  # a DAG that does not validate or plan: one line, as `run` says it
            if args.plan:
                print(explain(captured.dag, captured.config, args.members))
                _warn_if_not_shippable(captured.dag, captured.config)
            else:
                captured.dag.validate()
                print(render_dag(captured.dag, args.format))
        except Exception as error:
            report(error, args.job, verbose)
            return 2
        return 0
    _watch_environment(args, submitting=args.command == "submit")
    try:
        if args.command == "run":
            if args.master is not None and not args.local:
                check_master(args.master)  # a typo or a dead master: one line now, not Java's traces later
            misplaced = _misplaced_run_options(args.args)
            if misplaced:
                print(
                    f"jetspark: warning: {' '.join(misplaced)} after the job file goes to the job, not "
                    f"to jetspark; put it before the job file: jetspark run {' '.join(misplaced)} {args.job}",
                    file=sys.stderr,
                )
            submitted = jobs_submitted()
            run_job(args.job, args.args, args.local, args.master)  # Spark checks Java before it starts
            if jobs_submitted() == submitted:  # a DAG built and never run: say so, not exit 0 in silence
                print(
                    f"jetspark: {args.job!r} ended without calling jetspark.api.run(dag) (or a "
                    "runner's submit): no job ran",
                    file=sys.stderr,
                )
                return 2
            return 0
        check_java()
        command, env = submit_command(rest, Path(tempfile.mkdtemp(prefix="jetspark-submit-")))
        sys.stdout.flush()
        os.execve(command[0], command, env)
    except (JavaNotFoundError, WebUIError, SparkMasterError) as error:
        print(f"jetspark: {error}", file=sys.stderr)
        return 2
    except JobCancelledError as error:  # cancelled from the web UI, say
        print(f"jetspark: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as interrupt:  # at any moment, Spark's start-up included
        print(f"jetspark: interrupted{f'; {interrupt}' if str(interrupt) else ''}", file=sys.stderr)
        return 130
    except Exception as error:  # the job file's error: one line and the user's frame (--verbose: all)
        report(error, args.job, verbose)
        return 1
    return 0  # pragma: no cover - execve does not return


if __name__ == "__main__":
    sys.exit(main())
