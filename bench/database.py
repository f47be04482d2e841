"""The benchmarks' own PostgreSQL database: created when missing, so that a bench never
touches the development or test database."""

from __future__ import annotations


def ensure_database(url: str) -> None:
    """Create the database `url` names on its server unless it exists."""
    import psycopg

    conninfo = url.replace("postgres://", "postgresql://", 1)
    server, name = conninfo.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", connect_timeout=5, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
