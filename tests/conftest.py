"""Shared Hypothesis settings profiles (`ci` is selected when the CI environment variable is set),
the PostgreSQL server, and SIGINT for the processes the tests interrupt."""

import os
import signal
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None)
settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# derandomized for mutation testing (tools/mutation.py): a mutant is killed, or not, on every run
settings.register_profile("mutation", deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config: pytest.Config) -> None:
    """A test run started in the background by a non-interactive shell (`bash .ci/run &`, nohup)
    inherits SIGINT ignored, and Python keeps an inherited SIG_IGN, so would every `jetspark` a
    test starts and then interrupts (a Ctrl-C test would see its job run to the end instead). With
    a handler here, the children start with SIGINT at its default, as from a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def postgres_server_dsn() -> Iterator[str]:
    """The DSN of a real PostgreSQL server started for this test session (`tests/postgres_server.py`)."""
    from tests.postgres_server import postgres_server

    with postgres_server() as dsn:
        yield dsn


@pytest.fixture
def postgres_dsn(postgres_server_dsn: str) -> str:
    """The session's server, with no prepared transaction left by an earlier test: a test that
    failed between a kill and its resubmission leaves one by design, and its locks would make the
    next test's `DROP TABLE` wait forever instead of that test failing alone."""
    from tests.postgres_server import roll_back_prepared

    roll_back_prepared(postgres_server_dsn)
    return postgres_server_dsn
