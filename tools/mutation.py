"""Mutation testing of the engine's core modules with mutmut 2.5.1 (`tox -e mutation`; not run in CI).

Each module is mutated with its own fast test selection (the tests that exercise it; never Spark):

    python tools/mutation.py run [MODULE ...]   # mutmut over each module (all four by default)
    python tools/mutation.py run MODULE:START-END  # only the lines START to END of MODULE
    python tools/mutation.py summary [CACHE ...]  # killed / tested per module (.mutmut-cache,
                                                  # or several caches of part runs, merged)
    python tools/mutation.py pytest ARGS ...    # the test runner mutmut calls for each mutant

mutmut 2.5.1 counts a mutant as killed only when the test command exits with 1; a mutant that
breaks collection (exit 2), makes pytest error out (3, 4) or leaves no test to run (5) would count
as survived. `pytest` runs the selection and turns any non-zero exit, and a run longer than
`MUTATION_TEST_TIMEOUT` seconds (default 900; a mutant that makes a tasklet spin), into exit 1.
Everything runs at `nice -n 19`: the machine is shared. Hypothesis runs derandomized (profile `mutation` of
tests/conftest.py), so a mutant is killed or not the same way every run.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: One engine setting of the contract suite (tests/contract/conftest.py), the one with back-pressure
#: everywhere (outbox capacity 1, queues of 1 item, one member); the harness tests have no setting.
ONE_SETTING = ["-k", "not (batch1024 or queue1024 or members3)"]

#: module -> the pytest arguments that exercise it, the most targeted first (with -x the first
#: failure ends the run). Each selection runs in a few seconds on an idle core.
MODULES: dict[str, list[str]] = {
    "jetspark/core/partitioner.py": [
        "tests/unit/core/test_partitioner.py",
        "tests/property/test_partitioner_props.py",
    ],
    "jetspark/engine/coalescer.py": [
        "tests/unit/engine/test_coalescer.py",
        "tests/property/test_coalescer_props.py",
        "tests/contract/test_watermarks.py",
        *ONE_SETTING,
    ],
    "jetspark/engine/outbox.py": [
        "tests/unit/engine/test_outbox.py",
        "tests/contract/test_outbox.py",
        *ONE_SETTING,
    ],
    "jetspark/engine/tasklet.py": [
        "tests/contract/test_progress.py",
        "tests/contract/test_completion.py",
        "tests/unit/engine/test_tasklet.py",
        "tests/contract",
        *ONE_SETTING,
    ],
}


def run_tests(args: list[str]) -> int:
    """Run pytest on `args`; 0 when it passed, 1 on any failure, error or timeout."""
    timeout = float(os.environ.get("MUTATION_TEST_TIMEOUT", "900"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), HYPOTHESIS_PROFILE="mutation")
    # -x: the first failure kills the mutant; no:jetspark: these tests need not the plugin's fixtures
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:jetspark",
        *args,
    ]
    try:
        code = subprocess.run(command, cwd=ROOT, env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        message = f"mutation runner: tests ran longer than {timeout} s: the mutant is killed"
        print(message)
        with open(ROOT / ".mutation-timeouts.log", "a") as log:  # to tell a hang from a slow machine
            print(message, file=log)
        return 1
    return 0 if code == 0 else 1


def run_mutmut(modules: list[str]) -> None:
    for spec in modules:
        module, _, lines = spec.partition(":")
        # tools/mutmut_config.py skips the lines outside MUTATION_LINES
        env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"), MUTATION_LINES=lines)
        runner = shlex.join([sys.executable, str(Path(__file__).resolve()), "pytest", *MODULES[module]])
        options = ["--paths-to-mutate", module, "--runner", runner, "--no-progress", "--simple-output"]
        print(f"== {spec}: mutmut with `{runner}`", flush=True)
        # mutmut exits non-zero when mutants survive; the summary below tells how many
        subprocess.run(["mutmut", "run", *options], cwd=ROOT, env=env)


#: When several caches (runs of parts of a module, in copies of the tree) hold one mutant, the
#: most telling status wins.
STATUS_RANK = ["untested", "skipped", "bad_survived", "ok_suspicious", "bad_timeout", "ok_killed"]
DETECTED = ("ok_killed", "bad_timeout", "ok_suspicious")


def summary(caches: list[Path]) -> int:
    """Print per module: killed (including timeouts and suspicious: slow but killed) / tested.

    Mutants a run skipped (outside its MODULE:START-END) or has not reached yet do not count.
    """
    statuses: dict[tuple[str, int, int], str] = {}
    for cache in caches:
        if not cache.exists():
            print(f"no {cache}: run `python tools/mutation.py run` first")
            return 1
        rows = sqlite3.connect(cache).execute(
            'SELECT SourceFile.filename, Line.line_number, Mutant."index", Mutant.status FROM Mutant'
            " JOIN Line ON Mutant.line = Line.id JOIN SourceFile ON Line.sourcefile = SourceFile.id"
        )
        for filename, line, index, status in rows:
            key = (filename, line, index)
            old = statuses.get(key, "untested")
            statuses[key] = max(old, status, key=STATUS_RANK.index)
    counts: dict[str, dict[str, int]] = {}
    for (filename, _, _), status in statuses.items():
        by_status = counts.setdefault(filename, {})
        by_status[status] = by_status.get(status, 0) + 1
    for filename, by_status in sorted(counts.items()):
        killed = sum(by_status.get(s, 0) for s in DETECTED)
        tested = killed + by_status.get("bad_survived", 0)
        left = by_status.get("untested", 0) + by_status.get("skipped", 0)
        score = 100 * killed / tested if tested else 0.0
        print(
            f"{filename}: {score:.1f}% killed ({killed} of {tested} tested; "
            f"{tested - killed} survived, {left} not tested)"
        )
    print("survivors: `mutmut results`, then `mutmut show ID` (never while mutmut runs in that tree)")
    return 0


def main(argv: list[str]) -> int:
    os.nice(19)  # children inherit it
    command, args = (argv[0], argv[1:]) if argv else ("run", [])
    if command == "pytest":
        return run_tests(args)
    if command == "summary":
        return summary([Path(a) for a in args] or [ROOT / ".mutmut-cache"])
    if command == "run":
        unknown = [m for m in args if m.partition(":")[0] not in MODULES]
        if unknown:
            print(f"unknown module(s) {unknown}; choose from {list(MODULES)}")
            return 2
        run_mutmut(args or list(MODULES))
        return summary([ROOT / ".mutmut-cache"])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
