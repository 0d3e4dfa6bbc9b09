"""Transaction-scoped locks on a name, for writers that must take turns on something no
row stands for (a limit's line, a provider's message id).

On PostgreSQL ``pg_advisory_xact_lock(namespace, key)``, released at commit or rollback;
the namespace keeps one caller's locks apart from another's. SQLite needs no statement: its
IMMEDIATE transactions (config/settings.py) hold the database's write lock from BEGIN.
"""

import hashlib

from django.db import connection


def advisory_xact_lock(namespace: int, *parts: str) -> None:
    """Inside a transaction: wait until no other transaction holds (namespace, parts)."""
    if connection.vendor != "postgresql":
        return
    digest = hashlib.blake2b("\0".join(parts).encode(), digest_size=4).digest()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)",
            [namespace, int.from_bytes(digest, "big", signed=True)],
        )
