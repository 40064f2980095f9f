"""`smoldocs search`: ranked hits with the fused score and each retriever's rank (an explain view)."""

from __future__ import annotations

import argparse
import difflib
import textwrap
from dataclasses import dataclass

from agent import json_output
from agent.surfaces.commands.common import (
    add_current_only_option,
    add_embed_budget_option,
    add_index_options,
    open_index_from_args,
)
from agent.surfaces.commands.docs_sources import add_collection_option
from agent.errors import UsageError
from agent.settings import Settings
from rag.indexing.collections import collection_doc_ids, narrowed
from rag.excerpts.search_tool import as_indexed
from rag.indexing.hybrid import MODES
from rag.indexing.fill import coverage_note
from rag.printable import one_line, visible
from rag.types import Hit

HELP = "search the docs index and show how each retriever ranked the hits"
PREVIEW_LINES = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", help="what to look for")
    add_index_options(p)
    add_current_only_option(p)
    add_embed_budget_option(p)
    p.add_argument("-k", type=_positive, default=5, metavar="N", help="how many hits (default 5)")
    p.add_argument("--doc-id", action="append", dest="doc_ids", metavar="ID", help="only this document (repeatable)")
    add_collection_option(p)
    p.add_argument("--mode", choices=MODES, default="hybrid", help="retriever or fusion to use (default hybrid)")
    p.add_argument("--json", action="store_true", help="print the hits as a JSON list")


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


@dataclass(frozen=True)
class Options:
    query: str
    k: int = 5
    doc_ids: list[str] | None = None
    mode: str = "hybrid"
    json: bool = False


def run(settings: Settings, options: Options) -> int:
    if not options.query.strip():
        raise UsageError("the search query is empty: give a few words to look for")
    index = open_index_from_args(settings, quiet=options.json, embed_first=options.query)
    doc_ids = as_indexed(options.doc_ids or [], index.doc_ids) or None
    for doc_id in doc_ids or ():
        if doc_id not in index.doc_ids:
            close = difflib.get_close_matches(doc_id, index.doc_ids, n=3)
            hint = f"did you mean {', '.join(map(one_line, close))}?" if close else "run `smoldocs index` to list what is indexed"
            raise UsageError(f"unknown --doc-id {doc_id!r}: {hint}")
    doc_ids = narrowed(doc_ids, collection_doc_ids(index, settings.collections))
    hits = index.search(options.query, k=options.k, doc_ids=doc_ids, mode=options.mode) if doc_ids != [] else []
    coverage = index.dense_coverage
    if options.json:
        rows = [hit_to_json(rank, hit) for rank, hit in enumerate(hits, start=1)]
        data = {"query": options.query, "mode": options.mode, "k": options.k, "dense_coverage": round(coverage, 4), "hits": rows}
        print(json_output.dumps(data))
        return 0
    method = f"{options.mode} ({index.fusion}, {index.order} order)" if options.mode == "hybrid" else options.mode
    if not index.has_dense:
        method = "bm25, semantic search off"
    elif coverage_note(coverage):
        print(f"note: {coverage_note(coverage)} (the next run continues)")
    if not hits:
        print(visible(f"no results for {options.query!r} ({method}, {len(index)} chunks)"))
        return 0
    print(visible(f"{len(hits)} hits for {options.query!r} ({method}, {len(index)} chunks)"))
    for rank, hit in enumerate(hits, start=1):
        print(visible(format_hit(rank, hit)))
    return 0


def hit_to_json(rank: int, hit: Hit) -> dict:
    return {
        "rank": rank,
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "uri": hit.uri,
        "heading": hit.heading,
        "lines": hit.lines,
        "pages": hit.pages or None,
        "score": round(hit.score, 6),
        "bm25_rank": hit.bm25_rank,
        "dense_rank": hit.dense_rank,
        "outdated": hit.outdated,
        "expires": hit.expires,
        "collection": hit.collection or None,
        "text": hit.text,
    }


def format_hit(rank: int, hit: Hit) -> str:
    """Rank, id, lines, fused score and both ranks, the heading path, then the first lines of text."""
    ranks = f"bm25 {_rank(hit.bm25_rank)}  dense {_rank(hit.dense_rank)}"
    head = f"{rank:>2}. {one_line(hit.chunk_id)}  {hit.where}  score {hit.score:.4f}  {ranks}"
    if hit.collection and not hit.chunk_id.startswith(hit.collection + ":"):  # a joined index's ids name it already
        head += f"  ({one_line(hit.collection)})"
    if hit.outdated:
        head += "  [outdated]"
    lines = [line for line in hit.text.splitlines() if line.strip()]
    preview = [textwrap.shorten(line, 100, placeholder=" ...") for line in lines[:PREVIEW_LINES]]
    if len(lines) > PREVIEW_LINES:
        preview.append("...")
    body = "\n".join("      " + line for line in preview)
    return f"{head}\n      {one_line(hit.heading) or '(no heading)'}\n{body}"


def _rank(rank: int | None) -> str:
    return f"#{rank}" if rank is not None else "-"
