"""The benchmarks' own PostgreSQL database, created on first use (before Django is set up)."""

import dj_database_url
import psycopg


def ensure_database(url: str):
    db = dj_database_url.parse(url)
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"] or "postgres",
        password=db["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        if not conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]
        ).fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')
