"""`jetspark run` and `jetspark submit`.

jetspark run [--local] [--master URL] job.py [job args]
    Run a job file in this process. The job calls `jetspark.api.run(dag)`, which picks the
    runner from the environment this command sets: `--local` runs in process (no Spark, no
    Java); otherwise on an embedded Spark on URL (default `local[*]`).

jetspark submit job.py [--master URL] [spark-submit options] [-- job args]
    Hand the job file to pyspark's bundled `spark-submit`. For a master that is not local,
    a zip of jetspark and its pure-Python dependencies goes along as `--py-files`.

jetspark startpoint set|list|delete ...
    Startpoints of a job (`jetspark.cli.startpoint`).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jetspark.api import RUNNER_ENV
from jetspark.cli import startpoint
from jetspark.cli.pyfiles import build_zip
from jetspark.runners.spark.session import (
    MASTER_ENV,
    JavaNotFoundError,
    check_java,
    log4j_config_file,
    pyspark_home,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jetspark", description="Run jetspark jobs on Spark or in process.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a job file here (embedded Spark, or --local)")
    run.add_argument(
        "--local", action="store_true", help="run in process with the local runner: no Spark, no Java"
    )
    run.add_argument("--master", help="Spark master URL of the embedded session (default local[*])")
    run.add_argument("job", help="the job file, a Python script that calls jetspark.api.run(dag)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the job file")
    submit = commands.add_parser(
        "submit",
        help="spark-submit a job file (options after job.py go to spark-submit; job args after --)",
    )
    submit.add_argument("job", help="the job file")
    submit.add_argument(
        "rest", nargs=argparse.REMAINDER, help="[--master URL] [spark-submit options] [-- job args]"
    )
    startpoint.register(commands)
    return parser


def run_job(job: str, args: Sequence[str], local: bool, master: str | None) -> None:
    """Run the job file as `__main__` with `sys.argv = [job, *args]` after setting the environment."""
    path = Path(job)
    os.environ[RUNNER_ENV] = "local" if local else "spark"
    if master is not None:
        os.environ[MASTER_ENV] = master
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    runpy.run_path(str(path), run_name="__main__")


def submit_command(job: str, rest: Sequence[str], workdir: Path) -> tuple[list[str], dict[str, str]]:
    """The spark-submit command line and environment for `jetspark submit job rest...`."""
    options = list(rest)
    job_args: list[str] = []
    if "--" in options:
        cut = options.index("--")
        options, job_args = options[:cut], options[cut + 1 :]
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
    command = [str(Path(pyspark_home()) / "bin" / "spark-submit"), *options, job, *job_args]
    return command, env


def job_file_problem(job: str) -> str | None:
    """Why `job` cannot be run as a job file (it is missing, or a directory), or None."""
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
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "startpoint":
        return startpoint.run(args)
    problem = job_file_problem(args.job)
    if problem is not None:
        print(f"jetspark: {problem}", file=sys.stderr)
        return 2
    try:
        if args.command == "run":
            run_job(args.job, args.args, args.local, args.master)  # Spark checks Java before it starts
            return 0
        check_java()
        command, env = submit_command(args.job, args.rest, Path(tempfile.mkdtemp(prefix="jetspark-submit-")))
        sys.stdout.flush()
        os.execve(command[0], command, env)
    except JavaNotFoundError as error:
        print(f"jetspark: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "jetspark: interrupted (a job with a guarantee was suspended: run it again to resume)",
            file=sys.stderr,
        )
        return 130
    return 0  # pragma: no cover - execve does not return


if __name__ == "__main__":
    sys.exit(main())
