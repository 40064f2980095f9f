"""What an agent was shown: each `[n]` and the chunk behind it, read from a JSON list or from printed excerpts."""

from __future__ import annotations

import json
from typing import Any, Protocol, Sequence

from rag import markers
from rag.citations import Citation
from rag.errors import ShownUnreadable
from rag.excerpts.packing import OUTDATED_TAG, source_of
from rag.printable import one_line
from rag.types import Chunk

USAGE = (
    'give a JSON list of {"n": 1, "chunk_id": "docs/kv-cache.md#3"} objects, or the numbered excerpts '
    "as smoldocs pack or search_docs printed them"
)
UNMATCHED = "#?"  # appended to a uri whose printed text no indexed chunk has


class Catalog(Protocol):
    """What reading excerpts back needs of an index: its chunks, and lookup by id."""

    chunks: Sequence[Chunk]

    def chunk(self, chunk_id: str) -> Chunk | None: ...


def read_shown(text: str, catalog: Catalog) -> dict[int, Citation]:
    """`[n]` -> citation for everything in `text`; numbers whose chunk is unknown are kept (checked as unresolved)."""
    stripped = text.strip()
    if not stripped:
        raise ShownUnreadable(f"SHOWN is empty: {USAGE}")
    json_error: json.JSONDecodeError | None = None
    if stripped[0] in "[{":
        try:
            return _from_json(json.loads(text), catalog)  # whole text: error lines are the file's lines
        except json.JSONDecodeError as exc:
            json_error = exc  # `[1] docs/a.md` starts like a JSON list too
        except RecursionError:  # the json module nests by recursion
            raise ShownUnreadable(f"SHOWN nests too deep to be what smoldocs printed: {USAGE}") from None
    try:
        return _from_excerpts(text, catalog)
    except ShownUnreadable:
        if json_error is None:
            raise
        raise ShownUnreadable(
            f"SHOWN is not valid JSON: {json_error.msg} at line {json_error.lineno}, column {json_error.colno} "
            "(cut short?): give the whole file"
        ) from None


def _citation(n: int, chunk_id: str, catalog: Catalog, doc_id: str | None = None, uri: str | None = None) -> Citation:
    chunk = catalog.chunk(chunk_id)
    if chunk is not None:
        return Citation(n, chunk_id, doc_id or chunk.doc_id, uri or chunk.uri)
    guess = chunk_id.rsplit("#", 1)[0]
    return Citation(n, chunk_id, doc_id or guess, uri or guess)


def _add(shown: dict[int, Citation], citation: Citation) -> None:
    known = shown.get(citation.n)
    if known is not None and known.chunk_id != citation.chunk_id:
        raise ShownUnreadable(
            f"SHOWN gives [{citation.n}] two chunks ({known.chunk_id} and {citation.chunk_id}): "
            "give what one agent run was shown"
        )
    shown[citation.n] = citation


def _from_json(data: Any, catalog: Catalog) -> dict[int, Citation]:
    if isinstance(data, dict) and isinstance(data.get("citations"), list):
        data = data["citations"]  # smoldocs pack --json
    if not isinstance(data, list):
        raise ShownUnreadable(f"SHOWN is JSON but not a list: {USAGE}")
    shown: dict[int, Citation] = {}
    for i, item in enumerate(data):
        n = item.get("n") if isinstance(item, dict) else None
        chunk_id = item.get("chunk_id") if isinstance(item, dict) else None
        if isinstance(n, bool) or not isinstance(n, int) or n < 1 or not isinstance(chunk_id, str) or not chunk_id:
            raise ShownUnreadable(f"SHOWN item {i + 1} is not {{n: <number from 1>, chunk_id: <text>}}: {USAGE}")
        doc_id, uri = item.get("doc_id"), item.get("uri")
        _add(shown, _citation(n, chunk_id, catalog, doc_id if isinstance(doc_id, str) else None,
                              uri if isinstance(uri, str) else None))
    return shown


def _header(line: str) -> tuple[int, str] | None:
    """An excerpt header as blocks print it, `[n] <uri>` (or `[n] <chunk id>` in smoldocs pack's list)."""
    head, _, rest = line.strip().partition(" ")
    numbers = markers.parse(head)
    rest = rest.strip().removesuffix(OUTDATED_TAG).rstrip()
    return (numbers[0], rest) if len(numbers) == 1 and rest else None


def _from_excerpts(text: str, catalog: Catalog) -> dict[int, Citation]:
    lines = text.splitlines()
    # Headers print names with line breaks escaped (rag.printable.one_line): read them back the same way.
    by_uri: dict[str, list[Chunk]] = {}
    ids: dict[str, str] = {}
    for chunk in catalog.chunks:
        by_uri.setdefault(one_line(chunk.uri), []).append(chunk)
        ids[one_line(chunk.chunk_id)] = chunk.chunk_id
    headers: list[tuple[int, int, str]] = []  # (line number, n, what follows the number)
    i = 0
    while i < len(lines):
        found = _header(lines[i])
        if found is None:
            i += 1
            continue
        n, rest = found
        after = lines[i + 1] if i + 1 < len(lines) else ""
        # Chunk text may hold a line like `[2] see below`: only a known uri or id, or a provenance line, makes a header.
        if rest in by_uri or rest in ids or catalog.chunk(rest) is not None or source_of(after) or "#" in rest and " " not in rest:
            headers.append((i, n, rest))
            i = _past_chunk_text(lines, i, rest, after, by_uri, ids, catalog)
        else:
            i += 1
    if not headers:
        raise ShownUnreadable(f"SHOWN holds no numbered excerpt (a line like `[1] docs/kv-cache.md`): {USAGE}")
    shown: dict[int, Citation] = {}
    for k, (i, n, rest) in enumerate(headers):
        end = headers[k + 1][0] if k + 1 < len(headers) else len(lines)
        body = "\n".join(lines[i + 1 : end])
        source = source_of(lines[i + 1]) if i + 1 < len(lines) else None
        if source is not None:
            _add(shown, _citation(n, ids.get(source, source), catalog))
        elif rest in by_uri and n in shown:
            continue  # smoldocs pack listed `[n] <chunk id>` above its blocks
        elif rest not in by_uri:
            _add(shown, _citation(n, ids.get(rest, rest), catalog))  # a chunk id, as `smoldocs pack` lists them
        else:
            # A plain `[n] <uri>` block names no chunk: the chunk of that document whose whole text it prints.
            matches = [c for c in by_uri[rest] if c.text.strip() and c.text.strip() in body]
            chosen = max(matches, key=lambda c: len(c.text)) if matches else None
            uri = by_uri[rest][0].uri
            _add(shown, _citation(n, chosen.chunk_id if chosen else uri + UNMATCHED, catalog, uri, uri))
    return shown


def _past_chunk_text(lines: list[str], i: int, rest: str, after: str, by_uri: dict[str, list[Chunk]],
                     ids: dict[str, str], catalog: Catalog) -> int:
    """The line after the excerpt that starts at header line `i`: past the whole chunk text the packer printed.

    A document can hold lines that look like excerpt headers (`[9] a.md`, a provenance line): they sit inside a
    chunk's text, so once the block's chunk is known its text is stepped over whole, and no header is looked for in it.
    Text that is not a known chunk's, verbatim, is scanned line by line as before."""
    start = i + 1
    source = source_of(after)
    if source is not None:
        start += 1
        chunk = catalog.chunk(ids.get(source, source))
        candidates = [chunk] if chunk is not None else []
    else:
        candidates = by_uri.get(rest, [])
    best = start
    for chunk in candidates:
        body = chunk.text.splitlines()
        if body and lines[start : start + len(body)] == body:
            best = max(best, start + len(body))
    return best if best > start else i + 1
