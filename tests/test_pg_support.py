"""tests/pg_support.py itself: a process holding a throwaway PostgreSQL stops it when it is told to end (SIGTERM)."""

from __future__ import annotations

import os
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pg_support import Terminated, sigterm_raises

ROOT = Path(__file__).resolve().parent.parent
HOLDER = """
import time
from tests.pg_support import running_server
with running_server() as server:
    pid = (server.data_dir / "postmaster.pid").read_text().split()[0]
    print(pid, server.root, flush=True)
    time.sleep(300)
"""


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie nobody reaped, as PID 1 in a container may leave it, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_sigterm_in_the_block_raises_and_the_old_handler_comes_back():
    seen = []
    original = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))  # never the default: it kills
    try:
        with pytest.raises(Terminated), sigterm_raises():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted by the handler at once
        assert not seen
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
        assert seen == [signal.SIGTERM]  # the handler from before the block
    finally:
        signal.signal(signal.SIGTERM, original)


def test_a_process_holding_a_running_server_stops_it_on_sigterm(pg_server):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    pid, root = 0, None
    try:
        line = child.stdout.readline()
        assert line, child.stderr.read()
        pid, root = int(line.split()[0]), Path(line.split()[1])
        assert _alive(pid)
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=30)
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), "the postmaster outlived the process that started it"
        assert not root.exists()
        assert "Terminated" in child.stderr.read()
    finally:
        child.kill()
        if pid and _alive(pid):
            os.kill(pid, signal.SIGQUIT)  # never leave a server behind, even when the test fails
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


def test_a_kept_server_keeps_its_databases_for_the_next_run():
    """tests/pg_support.kept_server (benchmarks.shared_store --keep): the cluster is stopped, not deleted, and the
    next run starts it again with what it held."""
    import tempfile

    import psycopg

    from tests.pg_support import PgUnavailable, kept_server

    top = Path(tempfile.mkdtemp(prefix="smoldocs-pg-kept-"))
    top.chmod(0o755)  # as root the server runs as its own user, which must reach the folder
    root = top / "kept"
    try:
        try:
            with kept_server(root) as server:
                name = server.create_database(prefix="kept", vector=False)
                server.admin("CREATE TABLE held AS SELECT 42 AS answer", dbname=name)
        except PgUnavailable as exc:
            pytest.skip(str(exc))
        assert (root / "data").is_dir() and not (root / "data" / "postmaster.pid").exists()  # stopped, kept
        with kept_server(root) as server:
            with psycopg.connect(server.url(name)) as conn:
                assert conn.execute("SELECT answer FROM held").fetchone()[0] == 42
        assert not (root / "data" / "postmaster.pid").exists()
    finally:
        shutil.rmtree(top, ignore_errors=True)
