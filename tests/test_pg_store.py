"""The PostgreSQL + pgvector store against a real server (tests/pg_support.py), started once per session."""

from __future__ import annotations

import os

import psycopg
import pytest


def test_server_listens_on_loopback_as_a_plain_user_with_pgvector(pg_server, pg_url):
    with psycopg.connect(pg_url) as conn:
        address = conn.execute("SELECT inet_server_addr()::text").fetchone()[0]
        listen = conn.execute("SHOW listen_addresses").fetchone()[0]
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        fsync = conn.execute("SHOW fsync").fetchone()[0]
    assert address.split("/")[0] == "127.0.0.1" and listen == "127.0.0.1"
    assert version is not None and tuple(int(p) for p in version[0].split(".")[:2]) >= (0, 8)
    assert fsync == "off"
    owner = os.stat(pg_server.data_dir).st_uid
    assert owner != 0  # postgres refuses root; as root the fixture runs it as its own system user
