"""The PostgreSQL store's schema: connecting (passwords never shown), creating, versioning and upgrading the tables.

Everything lives in one PostgreSQL schema, `smoldocs`, so a read-only role needs two grants (docs/teams.md).
Chunks carry their text, heading path, lines, pages and their document's standing; postings carry BM25 term
frequencies computed with rag.retrieval.terms, so BM25 ranks exactly as the embedded index does; `terms` and `stats` are the
corpus statistics BM25's idf and length normalisation read at query time.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Sequence

from models.redaction import redact_url, scrub
from rag.errors import StoreRefused, StoreUnavailable

SCHEMA = "smoldocs"
SCHEMA_VERSION = 1
URL_SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT = 20  # seconds; libpq otherwise waits for the OS (minutes) on an unroutable host
WRITE_LOCK = 0x736D6F6C  # pg_advisory_xact_lock key ("smol") held by every transaction that writes the store
DEFAULT_DIM = 384  # all-MiniLM-L6-v2; a store made without an embedder keeps room for it
MIN_PGVECTOR = (0, 8)  # hnsw.iterative_scan arrived in 0.8.0


def is_store_url(text: str | None) -> bool:
    return text is not None and text.strip().lower().startswith(URL_SCHEMES)


def unavailable(exc: Exception, url: str, during: str = "") -> StoreUnavailable:
    """One line for a driver error: what happened at which (redacted) store, and what to do."""
    import psycopg

    detail = scrub(str(exc), url)
    detail = re.sub(r"^connection failed: (connection to server at \S+, port \d+ failed: )?", "", detail)
    where = redact_url(url)
    if isinstance(exc, psycopg.OperationalError) and "password authentication failed" in detail:
        return StoreUnavailable(f"the store {where} refused the login ({detail}): check the user and password in --store")
    if during:
        return StoreUnavailable(f"the store {where} failed {during} ({detail}): try again once the server is back")
    return StoreUnavailable(f"cannot reach the store {where} ({detail}): check that the server runs and --store is right")


def connect(url: str, autocommit: bool = True):
    """A psycopg connection to `url` (libpq options such as sslmode pass through); StoreUnavailable if it fails."""
    import psycopg

    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT, application_name="smoldocs")
    except psycopg.Error as exc:
        raise unavailable(exc, url) from None
    except Exception as exc:  # a malformed URL: psycopg raises ProgrammingError or ValueError before connecting
        raise StoreUnavailable(f"cannot use the store {redact_url(url)}: {scrub(str(exc), url)}") from None


@contextmanager
def write_transaction(conn):
    """One transaction holding the store's write lock: two ingesters take turns, one document at a time."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        yield conn


def _tables(dim: int) -> list[str]:
    s = SCHEMA
    return [
        f"CREATE SCHEMA IF NOT EXISTS {s}",
        f"CREATE TABLE {s}.schema_version (version int NOT NULL)",
        f"CREATE TABLE {s}.settings (key text PRIMARY KEY, value jsonb NOT NULL)",
        f"""CREATE TABLE {s}.documents (
            doc_id text PRIMARY KEY,
            sha256 text NOT NULL,
            outdated boolean NOT NULL DEFAULT false,
            why text NOT NULL DEFAULT '',
            superseded_by text,
            expires text,
            notice text,
            skipped text,
            chunk_count int NOT NULL DEFAULT 0,
            updated timestamptz NOT NULL DEFAULT now())""",
        f"""CREATE TABLE {s}.chunks (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            chunk_id text NOT NULL UNIQUE,
            doc_id text NOT NULL REFERENCES {s}.documents ON DELETE CASCADE,
            ordinal int NOT NULL,
            uri text NOT NULL,
            heading text[] NOT NULL,
            body text NOT NULL,
            line_start int NOT NULL,
            line_end int NOT NULL,
            page_start int NOT NULL DEFAULT 0,
            page_end int NOT NULL DEFAULT 0,
            outdated boolean NOT NULL DEFAULT false,
            length int NOT NULL,
            embedding vector({int(dim)}))""",
        f"CREATE INDEX chunks_doc ON {s}.chunks (doc_id, ordinal)",
        f"""CREATE TABLE {s}.postings (
            term text NOT NULL,
            chunk bigint NOT NULL,
            tf int NOT NULL,
            length int NOT NULL)""",
        *(statement for steps in DEFERRED.values() for statement in steps),
        f"CREATE TABLE {s}.terms (term text PRIMARY KEY, df int NOT NULL, prefix text NOT NULL)",
        f"CREATE INDEX terms_prefix ON {s}.terms (prefix)",
        f"""CREATE TABLE {s}.stats (
            one boolean PRIMARY KEY DEFAULT true CHECK (one),
            chunks bigint NOT NULL DEFAULT 0,
            total_length bigint NOT NULL DEFAULT 0,
            embedded bigint NOT NULL DEFAULT 0,
            generation bigint NOT NULL DEFAULT 0)""",
        f"INSERT INTO {s}.stats DEFAULT VALUES",
        f"INSERT INTO {s}.schema_version VALUES ({SCHEMA_VERSION})",
    ]


# Indexes and constraints a first load builds once at its end instead of row by row (rag.postgres.ingest): name ->
# the statements that make it. A term's postings are spread over the table (written document by document): with tf
# and length in the key's index a search reads them from the index alone, once vacuumed (measured: 15k heap pages
# for 19k postings at 20k chunks without it). The key's index is built before the constraint takes it over, so
# readers wait only for the moment the constraint is added, not for the build. The foreign key is added NOT VALID:
# it checks every posting written after it and cascades deletes; the postings of the load were written with the
# ids of the chunks written in the same transaction, and validating 40M of them would take a minute of a full scan.
DEFERRED: dict[str, tuple[str, ...]] = {
    "postings_pkey": (f"CREATE UNIQUE INDEX postings_pkey ON {SCHEMA}.postings (term, chunk) INCLUDE (tf, length)",
                      f"ALTER TABLE {SCHEMA}.postings ADD CONSTRAINT postings_pkey PRIMARY KEY USING INDEX postings_pkey"),
    "postings_chunk": (f"CREATE INDEX postings_chunk ON {SCHEMA}.postings (chunk)",),
    "postings_chunk_fkey": (f"ALTER TABLE {SCHEMA}.postings ADD CONSTRAINT postings_chunk_fkey FOREIGN KEY (chunk) "
                            f"REFERENCES {SCHEMA}.chunks ON DELETE CASCADE NOT VALID",),
    "chunks_embedding": (f"CREATE INDEX chunks_embedding ON {SCHEMA}.chunks USING hnsw (embedding vector_cosine_ops)",),
}
_DROP = {
    "postings_pkey": f"ALTER TABLE {SCHEMA}.postings DROP CONSTRAINT IF EXISTS postings_pkey",
    "postings_chunk": f"DROP INDEX IF EXISTS {SCHEMA}.postings_chunk",
    "postings_chunk_fkey": f"ALTER TABLE {SCHEMA}.postings DROP CONSTRAINT IF EXISTS postings_chunk_fkey",
    "chunks_embedding": f"DROP INDEX IF EXISTS {SCHEMA}.chunks_embedding",
}
BUILD_MEMORY = "512MB"  # maintenance_work_mem while building them: the sorts and the HNSW graph stay in memory longer


def missing_deferred(conn) -> list[str]:
    """The deferred indexes and constraints this store lacks (all present: [])."""
    names = {r[0] for r in conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace UNION "
        "SELECT conname FROM pg_constraint WHERE connamespace = %s::regnamespace", (SCHEMA, SCHEMA)).fetchall()}
    return [name for name in DEFERRED if name not in names]


def drop_deferred(conn) -> bool:
    """Before a first load: drop the deferred indexes if the store holds no chunk yet (checked under the write lock,
    so a second ingester starting on a store being filled finds chunks and leaves them); whether they were dropped."""
    with write_transaction(conn):
        if conn.execute(f"SELECT chunks FROM {SCHEMA}.stats").fetchone()[0]:
            return False
        for name in reversed(DEFERRED):
            conn.execute(_DROP[name])
    return True


def build_deferred(conn, names: Sequence[str] | None = None, memory: str = BUILD_MEMORY) -> list[str]:
    """Build the deferred indexes and constraints the store lacks (of `names`; all when None), each in its own
    transaction under the write lock (after a first load, or after one that was interrupted); the names built.
    `memory` is maintenance_work_mem for the builds: an HNSW graph larger than it is built much more slowly."""
    built = []
    for name, statements in DEFERRED.items():
        if names is not None and name not in names:
            continue
        with write_transaction(conn):
            if name not in missing_deferred(conn):
                continue  # another ingester built it meanwhile
            conn.execute(f"SET LOCAL maintenance_work_mem = '{memory}'")
            for statement in statements:
                conn.execute(statement)
        built.append(name)
    return built


# version -> statements that bring a store of that version to the next one. Empty while there is one version;
# the first change of the tables adds its ALTERs here and bumps SCHEMA_VERSION.
MIGRATIONS: dict[int, list[str]] = {}


def stored_version(conn) -> int | None:
    """The schema version of the store in this database; None when there is none."""
    found = conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.schema_version",)).fetchone()[0]
    if found is None:
        return None
    row = conn.execute(f"SELECT max(version) FROM {SCHEMA}.schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else None


def check_version(conn, url: str) -> None:
    """For readers: the store exists and speaks this version, else one line saying what to run."""
    version = stored_version(conn)
    if version is None:
        raise StoreRefused(f"the store {redact_url(url)} holds no smoldocs index: run `smoldocs index --docs DIR --store URL` first")
    if version > SCHEMA_VERSION:
        raise StoreRefused(f"the store {redact_url(url)} has schema version {version}, newer than this smoldocs "
                           f"({SCHEMA_VERSION}): upgrade smoldocs")
    if version < SCHEMA_VERSION:
        raise StoreRefused(f"the store {redact_url(url)} has schema version {version}: run `smoldocs index --store URL` "
                           f"once to upgrade it to {SCHEMA_VERSION}")


def check_vector_version(conn, url: str) -> None:
    """pgvector is recent enough for iterative scans (0.8), which keep filtered searches at k rows."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        return
    version = tuple(int(p) for p in re.findall(r"\d+", row[0])[:2])
    if version < MIN_PGVECTOR:
        raise StoreRefused(f"the store {redact_url(url)} has pgvector {row[0]}; smoldocs needs "
                           f"{'.'.join(map(str, MIN_PGVECTOR))} or later: install it, then ALTER EXTENSION vector UPDATE")


def ensure_vector(conn, url: str) -> None:
    """pgvector is installed in this database (created here when this role may); else one line saying who can."""
    import psycopg

    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return check_vector_version(conn, url)
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        raise StoreRefused(f"the PostgreSQL server of {redact_url(url)} has no pgvector extension: install pgvector "
                           "(0.8 or later) on that server, then run CREATE EXTENSION vector")
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege:
        db = conn.info.dbname
        raise StoreRefused(f"the database {db} of {redact_url(url)} has no pgvector extension and this role may not "
                           f"create it: ask its owner to run CREATE EXTENSION vector in {db}") from None
    check_vector_version(conn, url)


def ensure_schema(conn, url: str, dim: int = DEFAULT_DIM) -> None:
    """Create the tables, or upgrade them to SCHEMA_VERSION, under the write lock; refuse a newer schema."""
    ensure_vector(conn, url)
    with write_transaction(conn):
        version = stored_version(conn)
        if version is None:
            for statement in _tables(dim):
                conn.execute(statement)
            return
        if version > SCHEMA_VERSION:
            check_version(conn, url)
        while version < SCHEMA_VERSION:
            steps = MIGRATIONS.get(version)
            if steps is None:
                raise StoreRefused(f"the store {redact_url(url)} has schema version {version}, which this smoldocs cannot "
                                   f"upgrade: re-create it with `smoldocs index --rebuild --store URL`")
            for statement in steps:
                conn.execute(statement)
            version += 1
            conn.execute(f"UPDATE {SCHEMA}.schema_version SET version = %s", (version,))


def drop_schema(conn) -> None:
    """Remove every table of the store (for --rebuild), under the write lock."""
    with write_transaction(conn):
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def read_settings(conn) -> dict:
    return {k: v for k, v in conn.execute(f"SELECT key, value FROM {SCHEMA}.settings").fetchall()}


def write_settings(conn, values: dict) -> None:
    for key, value in values.items():
        conn.execute(
            f"INSERT INTO {SCHEMA}.settings VALUES (%s, %s::jsonb) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )


def embedding_dim(conn) -> int:
    """The dimension the embedding column was created with."""
    row = conn.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'embedding'",
        (f"{SCHEMA}.chunks",),
    ).fetchone()
    return int(row[0]) if row else 0
