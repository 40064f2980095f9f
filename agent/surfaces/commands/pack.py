"""`smoldocs pack`: search, then pack the hits as search_docs would, and show what was kept and why."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

# Looked up on `common` at call time, so a test that swaps in fake components reaches every command.
from agent import json_output
from agent.surfaces.commands import common
from agent.surfaces.commands.common import (
    add_current_only_option,
    add_index_options,
    open_index_from_args,
)
from agent.errors import UsageError
from agent.settings import Settings
from rag.excerpts.conflicts import find_conflicts
from rag.excerpts.near_duplicates import DEFAULT_JACCARD
from rag.excerpts.packing import ORDERS, Ledger, PackedContext, Packer
from rag.excerpts.search_tool import DEFAULT_K, DEFAULT_MAX_TOKENS, MAX_K, MAX_QUERY_CHARS, MIN_K
from rag.printable import one_line, visible

HELP = "pack search hits into numbered excerpts under a token budget (a smoke test of what the model sees)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", help="what to search for (quote it)")
    p.add_argument("--budget", type=int, default=DEFAULT_MAX_TOKENS, metavar="N",
                   help=f"token budget for the packed excerpts (default {DEFAULT_MAX_TOKENS})")
    p.add_argument("-k", type=int, default=DEFAULT_K, metavar="N", help=f"hits to retrieve, {MIN_K}-{MAX_K} (default {DEFAULT_K})")
    p.add_argument("--order", choices=ORDERS, default="rank", help="block order: rank, or best at both ends")
    p.add_argument("--jaccard-threshold", type=_threshold, default=DEFAULT_JACCARD, metavar="X",
                   help="leave out an excerpt whose word 5-shingles overlap a kept one's this much (Jaccard, "
                        f"above 0 and at most 1; default {DEFAULT_JACCARD}; 'off' keeps near-duplicates)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a report")
    add_index_options(p)
    add_current_only_option(p)


def _threshold(text: str) -> float | None:
    if text.strip().lower() in ("off", "none"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above 0 and at most 1, or off; got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number above 0 and at most 1, or off; got {text}")
    return value


@dataclass(frozen=True)
class Options:
    query: str
    budget: int = DEFAULT_MAX_TOKENS
    k: int = DEFAULT_K
    order: str = "rank"
    jaccard_threshold: float | None = DEFAULT_JACCARD
    json: bool = False


def run(settings: Settings, options: Options) -> int:
    _check(options)
    models = common.open_models(settings)
    tokenizer = models.tokenizer
    index = open_index_from_args(settings, models)
    hits = index.search(options.query, k=options.k)
    packed, citations = Packer(tokenizer, Ledger()).assemble(
        options.query, hits, options.budget, order=options.order, jaccard_threshold=options.jaccard_threshold
    )
    report = _report(packed, citations, len(hits), tokenizer.name, options.jaccard_threshold)
    print(json_output.dumps(report) if options.json else visible(_render(report)))
    return 0


def _check(options: Options) -> None:
    """The same limits search_docs puts on the model, checked before anything slow is loaded."""
    if not options.query.strip():
        raise UsageError('QUERY is empty: give some words to search for, e.g. smoldocs pack "kv cache"')
    if len(options.query) > MAX_QUERY_CHARS:
        raise UsageError(f"QUERY is {len(options.query)} characters long: give at most {MAX_QUERY_CHARS}")
    if not MIN_K <= options.k <= MAX_K:
        raise UsageError(f"-k {options.k} is out of range: give -k from {MIN_K} to {MAX_K}")
    if options.budget < 0:
        raise UsageError(f"--budget {options.budget} is negative: give 0 or more tokens")


def _report(
    packed: PackedContext, citations, hits_in: int, tokenizer: str, threshold: float | None = None
) -> dict[str, Any]:
    numbered = list(zip((c.n for c in citations), packed.used))
    return {
        "query": packed.query,
        "budget": packed.max_tokens,
        "tokenizer": tokenizer,
        "order": packed.order,
        "jaccard_threshold": threshold,
        "hits_in": hits_in,
        "hits_out": len(packed.used),
        "tokens": packed.tokens,
        "dropped": packed.dropped_by_reason(),
        "dropped_as_duplicate": packed.dropped_as_duplicate,
        "dropped_for_budget": packed.dropped_for_budget,
        "omissions": [
            {"rank": o.rank, "chunk_id": o.chunk_id, "uri": o.uri, "reason": o.reason, "tokens": o.tokens,
             "duplicate_of": o.duplicate_of, "why": o.why}
            for o in packed.omissions
        ],
        "citations": [
            {"n": c.n, "chunk_id": c.chunk_id, "doc_id": c.doc_id, "uri": c.uri, "outdated": bool(h.outdated)}
            for c, h in zip(citations, packed.used)
        ],
        "conflicts": [c.to_json() for c in find_conflicts(numbered)],
        "text": packed.text,
    }


def _render(report: dict[str, Any]) -> str:
    dropped = ", ".join(f"{reason} {n}" for reason, n in report["dropped"].items() if n) or "none"
    lines = [
        f"query:     {report['query']}",
        f"budget:    {report['budget']} tokens ({report['tokenizer']} tokenizer, order {report['order']})",
        f"hits:      {report['hits_in']} in, {report['hits_out']} out",
        f"tokens:    {report['tokens']} used of {report['budget']}",
        f"dropped:   {report['dropped_as_duplicate']} as duplicates, {report['dropped_for_budget']} for the budget"
        f" ({dropped})",
    ]
    for o in report["omissions"]:
        why = f"over budget: {o['tokens']} tokens with it" if o["reason"] == "over_budget" else o["why"]
        lines.append(f"  - rank {o['rank']}: {one_line(o['chunk_id'])} ({why})")
    lines += [f"  [{c['n']}] {one_line(c['chunk_id'])}" + (" [outdated]" if c["outdated"] else "") for c in report["citations"]]
    lines += [f"note: {c['note']}" for c in report["conflicts"]]
    lines += ["", report["text"] if report["text"] else "(nothing fits the budget)"]
    return "\n".join(lines)
