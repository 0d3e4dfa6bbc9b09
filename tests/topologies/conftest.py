"""The topologies the tests run the engine through, each started by a script of its own
(``scripts/topology/<name> start``); a test whose topology is not up is skipped with why.

The RabbitMQ cluster: ``DURABLE_TEST_RABBITMQ_CLUSTER`` may name the broker URLs
(``;``-separated) the workers use; the nodes are stopped and started through the script
either way. PgBouncer: ``DURABLE_TEST_PGBOUNCER_URL`` may name it (default 127.0.0.1:6432).
The PostgreSQL failover pair is the test's own (tests/topologies/test_postgres_failover.py).
"""

import json
import os
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import psycopg
import pytest
from django.db import connection
from kombu import Connection, Exchange, Queue

from tests.faults.harness import FAULT_TIMINGS
from tests.support import ROOT
from tests.workers import celery_processes

SCRIPT = ROOT / "scripts" / "topology" / "rabbitmq-cluster"
NOT_UP = (
    "the RabbitMQ cluster is not set up: run scripts/topology/rabbitmq-cluster start, "
    "or set DURABLE_TEST_RABBITMQ_CLUSTER"
)
# Every queue the engine declares, and the site's "llm", which Celery creates when named.
QUEUES = ("celery", "durable-takeover", "durable-sweep", "llm")
QUORUM = {"x-queue-type": "quorum"}


def cluster(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@dataclass
class RabbitMQCluster:
    """Three nodes, durable1..3@localhost, and the broker URL list that names them."""

    urls: str

    def leader(self, queue: str, *, asking: int = 1) -> str:
        """The node that holds ``queue``'s quorum leader, e.g. ``durable1@localhost``."""
        listed = cluster(
            "ctl", str(asking), "-q", "list_queues", "name", "leader", "--formatter", "json"
        )
        assert listed.returncode == 0, listed.stderr
        leaders = {row["name"]: row["leader"] for row in json.loads(listed.stdout)}
        return leaders[queue]

    def queue_types(self) -> dict[str, str]:
        listed = cluster("ctl", "1", "-q", "list_queues", "name", "type", "--formatter", "json")
        assert listed.returncode == 0, listed.stderr
        return {row["name"]: row["type"] for row in json.loads(listed.stdout)}

    def kill(self, node: str) -> float:
        """kill -9 the node's Erlang VM; returns the time.time() it was dead by."""
        killed = cluster("kill", node_number(node))
        assert killed.returncode == 0, killed.stderr
        return time.time()

    def start(self) -> float:
        """Start whatever node is down and wait for the cluster; returns how long it took."""
        started = time.monotonic()
        result = cluster("start")
        assert result.returncode == 0, result.stdout + result.stderr
        return time.monotonic() - started

    def declare_and_purge(self) -> None:
        """Declare the queues as the workers will (quorum), so that their leaders are
        placed before any worker starts, and drop what an earlier test left in them."""
        with Connection(self.urls) as broker:
            for name in QUEUES:
                queue = Queue(name, Exchange(name), routing_key=name, queue_arguments=QUORUM)
                queue(broker.default_channel).declare()
                queue(broker.default_channel).purge()

    def urls_with(self, node: str, *, first: bool) -> str:
        """The URL list with ``node``'s first or last: kombu connects to the first that
        answers, so every client is connected to ``node``, or to another one."""
        port = f":{5680 + int(node_number(node))}/"
        urls = sorted(self.urls.split(";"), key=lambda url: port in url)
        return ";".join(reversed(urls) if first else urls)


def node_number(node: str) -> str:
    return node.split("@")[0].removeprefix("durable")


@pytest.fixture
def rabbitmq_cluster() -> RabbitMQCluster:
    if connection.vendor != "postgresql":
        pytest.skip("the RabbitMQ cluster tests run on PostgreSQL (set DATABASE_URL)")
    status = cluster("status", timeout=60)
    urls = os.environ.get("DURABLE_TEST_RABBITMQ_CLUSTER", "").strip()
    if status.returncode != 0:
        if urls:
            pytest.fail(
                f"DURABLE_TEST_RABBITMQ_CLUSTER is set, but the cluster is down:\n{status.stdout}"
            )
        pytest.skip(NOT_UP)
    if not urls:
        urls = next(
            line.split("=", 1)[1]
            for line in status.stdout.splitlines()
            if line.startswith("CELERY_BROKER_URL=")
        )
    topology = RabbitMQCluster(urls)
    topology.declare_and_purge()
    yield topology
    topology.start()  # a node a test stopped comes back for the next one


PGBOUNCER_URL = os.environ.get("DURABLE_TEST_PGBOUNCER_URL", "postgres://postgres@127.0.0.1:6432/")
NOT_SET_UP = (
    "PgBouncer not set up: run scripts/topology/pgbouncer start, or set DURABLE_TEST_PGBOUNCER_URL"
)


@dataclass(frozen=True)
class PgBouncer:
    """A running PgBouncer: its address, and the test database as reached through it."""

    host: str
    port: int
    user: str

    def url(self, database: str) -> str:
        return f"postgres://{self.user}@{self.host}:{self.port}/{database}"

    def connect(self, database: str) -> psycopg.Connection:
        """A plain client of the pooler; client-side binding, which the admin console needs."""
        return psycopg.connect(
            self.url(database),
            autocommit=True,
            connect_timeout=5,
            cursor_factory=psycopg.ClientCursor,
        )

    def show(self, what: str) -> list[dict]:
        """``SHOW <what>`` on the admin console (POOLS, CLIENTS, SERVERS), one dict a row."""
        with self.connect("pgbouncer") as admin, admin.cursor() as cursor:
            cursor.execute(f"SHOW {what}")
            names = [column.name for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def reconnect(self, database: str) -> None:
        """Close the server sessions on ``database`` once their clients release them, so that
        the test database can be dropped even when the suite itself does not go through
        PgBouncer (tests/conftest.py ends them when it does)."""
        with self.connect("pgbouncer") as admin:
            admin.execute(f'RECONNECT "{database}"')


@pytest.fixture
def pgbouncer():
    if connection.vendor != "postgresql":
        pytest.skip("PgBouncer forwards to PostgreSQL: run with DATABASE_URL=postgres://...")
    address = urlsplit(PGBOUNCER_URL)
    pooler = PgBouncer(
        address.hostname or "127.0.0.1", address.port or 6432, address.username or "postgres"
    )
    try:
        pooler.show("VERSION")
    except psycopg.OperationalError as error:
        pytest.skip(f"{NOT_SET_UP} ({pooler.host}:{pooler.port}: {str(error).strip()})")
    yield pooler
    pooler.reconnect(connection.settings_dict["NAME"])


@pytest.fixture
def celery_through_pgbouncer(tmp_path, settings, pgbouncer):
    """Workers and beat whose every connection goes through PgBouncer, configured for it as
    production would be (DATABASE_POOLER=transaction); the test process dispatches."""
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    with celery_processes(
        tmp_path,
        DATABASE_URL=pgbouncer.url(connection.settings_dict["NAME"]),
        DATABASE_POOLER="transaction",
        PGAPPNAME="durable-through-pgbouncer",
        **FAULT_TIMINGS,
    ) as processes:
        yield processes
