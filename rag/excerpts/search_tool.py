"""The search_docs tool: validate the model's arguments, retrieve, pack with the run's ledger."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Protocol, Sequence

import jsonschema

from models.protocols import Counter
from rag.citations import Citation
from rag.errors import BudgetError
from rag.indexing.collections import UnknownCollection, collection_doc_ids, narrowed
from rag.excerpts.near_duplicates import DEFAULT_JACCARD, check_threshold
from rag.excerpts.packing import ORDERS, Ledger, PackedContext, Packer, block
from rag.printable import one_line
from rag.retrieval.spelling import respelled
from rag.types import Hit, Retriever

SEARCH_DOCS_NAME = "search_docs"
NO_RESULTS = "no results"
DEFAULT_K = 5
MIN_K, MAX_K = 1, 20
MAX_QUERY_CHARS = 1000
DEFAULT_MAX_TOKENS = 1024  # what a first question's excerpts may take of a 2048-token window
NAMED_UNKNOWN = 5  # unknown doc ids named in the error; the rest are counted
MAX_ID_CHARS = 200  # longer ids are cut in the error (real paths are far shorter)
SEARCH_DOCS_DESCRIPTION = (
    "Search the documentation. Returns numbered excerpts `[n] <uri>`; cite them as [n] in the answer."
)
SEARCH_DOCS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY_CHARS,
            "description": "What to look for, in a few words.",
        },
        "k": {
            "type": "integer",
            "minimum": MIN_K,
            "maximum": MAX_K,
            "default": DEFAULT_K,
            "description": "How many excerpts to retrieve.",
        },
        "doc_ids": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only search these documents (paths such as docs/kv-cache.md).",
        },
        "collections": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only search these collections (named docs sources, such as notes or man).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

_VALIDATOR = jsonschema.Draft202012Validator(SEARCH_DOCS_SCHEMA)


def tool_spec() -> dict[str, Any]:
    """The tool as a chat template lists it (OpenAI function format)."""
    return {
        "type": "function",
        "function": {
            "name": SEARCH_DOCS_NAME,
            "description": SEARCH_DOCS_DESCRIPTION,
            "parameters": SEARCH_DOCS_SCHEMA,
        },
    }


USAGE = ('expected {"query": "<1-1000 characters>", "k": <1-20, default 5>, "doc_ids": ["<doc path>", ...], '
         '"collections": ["<collection>", ...]}')


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    message = error.message
    if error.validator == "maxLength" and isinstance(error.instance, str):
        # jsonschema quotes the whole instance; a 1000-character echo helps no one.
        message = f"is {len(error.instance)} characters long, more than {error.validator_value}"
    return f"{where}: {message}" if where else message


def schema_errors(arguments: Any, validator: jsonschema.protocols.Validator = _VALIDATOR) -> list[str]:
    """Every way `arguments` breaks the schema (search_docs' by default), each naming the property; empty when valid."""
    errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    return [_describe(e) for e in errors]


def search_problem(arguments: Any) -> str | None:
    """One clear message naming what is wrong with search_docs arguments, or None when they are valid."""
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            return f"invalid {SEARCH_DOCS_NAME} arguments: not valid JSON ({exc}); {USAGE}"
    problems = schema_errors(arguments)
    if not problems and not arguments["query"].strip():
        problems = ["query: must contain words, not only spaces"]
    if not problems:
        return None
    return f"invalid {SEARCH_DOCS_NAME} arguments: " + "; ".join(problems) + f"; {USAGE}"


class Reorder(Protocol):
    """What reorders search hits before packing: the first `pool` hits in, the best `k` out."""

    pool: int

    def __call__(self, query: str, hits: list[Hit], k: int, /) -> list[Hit]: ...


@dataclass(frozen=True)
class SearchResult:
    """What one call returns: `text` is what the model sees."""

    text: str
    error: str | None = None
    hits: list[Hit] = field(default_factory=list)
    packed: PackedContext | None = None
    citations: list[Citation] = field(default_factory=list)
    searched: str = ""  # the query as searched, where a misspelt word was read as another (rag.retrieval.spelling)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class SearchDocsTool:
    """search_docs for one agent run: every call packs with the same ledger."""

    retriever: Retriever
    ledger: Ledger
    counter: Counter
    max_tokens: int = DEFAULT_MAX_TOKENS
    order: str = "rank"
    jaccard_threshold: float | None = DEFAULT_JACCARD  # near-duplicate collapse; None keeps every excerpt
    render: Callable[[int, Any], str] = block  # sourced_block adds each excerpt's source id, section and lines
    name: str = SEARCH_DOCS_NAME
    schema: dict = field(default_factory=lambda: SEARCH_DOCS_SCHEMA)
    # Reorders the hits before packing (rag.answering.passages.PassageReranker): called with the query, the
    # retriever's first `reorder.pool` hits and k; None: the retriever's order.
    reorder: Reorder | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 0:
            raise BudgetError(f"search_docs max tokens must be a whole number >= 0, not {self.max_tokens!r}")
        if self.order not in ORDERS:
            raise ValueError(f"unknown order {self.order!r}: choose one of {', '.join(ORDERS)}")
        check_threshold(self.jaccard_threshold)
        self._packer = Packer(self.counter, self.ledger, self.render)

    def __call__(self, arguments: Mapping[str, Any] | str) -> SearchResult:
        """Run one search. Bad arguments give an `Error:` result; retrieval or counting failures raise."""
        problem = search_problem(arguments)
        if problem is not None:
            return SearchResult(text=f"Error: {problem}", error=problem)
        given: Mapping[str, Any] = json.loads(arguments) if isinstance(arguments, (str, bytes)) else arguments
        query = respelled(given["query"], self.retriever.vocabulary)  # "cahce" searched as "cache"
        result = self._search(query, given)
        return replace(result, searched=query) if query != given["query"] else result

    def _search(self, query: str, given: Mapping[str, Any]) -> SearchResult:
        k = int(given.get("k", DEFAULT_K))
        # An empty list is read as "no filter": a filter that matches nothing is never what the model means.
        # The index's documents are listed once, and only for a filter: a store of 92k documents took 58 ms a listing.
        asked = list(given.get("doc_ids") or ())
        listed = self.retriever.doc_ids if asked else None
        doc_ids = as_indexed(asked, listed) or None
        unknown = _unknown_doc_ids(listed, doc_ids)
        if unknown:
            return SearchResult(text=f"Error: {unknown}", error=unknown)
        try:  # an empty list of collections is no filter, as for doc_ids
            within = collection_doc_ids(self.retriever, list(given.get("collections") or ()))
        except UnknownCollection as exc:
            return SearchResult(text=f"Error: {exc}", error=str(exc))
        doc_ids = narrowed(doc_ids, within)
        if doc_ids == []:  # the named documents are all outside the named collections
            return SearchResult(text=NO_RESULTS)
        if self.reorder is None:
            hits = list(self.retriever.search(query, k=k, doc_ids=doc_ids))
        else:
            hits = self.reorder(query, list(self.retriever.search(query, k=max(k, self.reorder.pool), doc_ids=doc_ids)), k)
        if not hits:
            return SearchResult(text=NO_RESULTS, hits=hits)
        packed, citations = self._packer.assemble(
            query, hits, self.max_tokens, order=self.order, jaccard_threshold=self.jaccard_threshold
        )
        if not packed.used and packed.dropped_for_budget:
            text = f"{NO_RESULTS}: {len(hits)} excerpts matched but none fits in {self.max_tokens} tokens"
            return SearchResult(text=text, hits=hits, packed=packed)
        if not packed.used:
            text = f"{NO_RESULTS}: {len(hits)} excerpts matched but every one was left out ({_reasons(packed)})"
            return SearchResult(text=text, hits=hits, packed=packed)
        return SearchResult(text=packed.text, hits=hits, packed=packed, citations=citations)


def _unknown_doc_ids(listed: Sequence[str] | None, doc_ids: list[str] | None) -> str | None:
    """Name doc ids the index (listing `listed`) does not hold: a misspelled filter must not look like a search that
    found nothing."""
    if not doc_ids or listed is None:
        return None  # a retriever that cannot list its documents is trusted with the filter
    known = set(listed)
    missing = [d for d in doc_ids if d not in known]
    if not missing:
        return None
    named = missing[:NAMED_UNKNOWN]  # 200,000 ids once came back whole: 3.3 MB of error
    close = sorted({m for d in named if len(d) <= MAX_ID_CHARS for m in difflib.get_close_matches(d, known, n=3)})
    hint = f"; did you mean {', '.join(map(one_line, close))}?" if close else "; leave doc_ids out to search every document"
    more = f" and {len(missing) - len(named)} more" if len(missing) > len(named) else ""
    return f"unknown doc id {', '.join(_shown_id(d) for d in named)}{more}{hint}"


def as_indexed(doc_ids: list[str], known) -> list[str]:
    """Each id as the index holds it: an id written as listings show it (controls escaped, rag.printable.one_line)
    is that document, so a file name with a line break or an ESC can still be named."""
    if known is None:
        return doc_ids
    known = set(known)
    missing = [d for d in doc_ids if d not in known]
    if not missing:
        return doc_ids
    shown = {one_line(k): k for k in known}
    return [d if d in known else shown.get(d, d) for d in doc_ids]


def _shown_id(doc_id: str) -> str:
    if len(doc_id) <= MAX_ID_CHARS:
        return repr(doc_id)
    return f"{doc_id[:MAX_ID_CHARS]!r}... ({len(doc_id)} characters)"


def search_docs_tool(
    retriever: Retriever,
    ledger: Ledger,
    counter: Counter,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    order: str = "rank",
    jaccard_threshold: float | None = DEFAULT_JACCARD,
    render: Callable[[int, Any], str] = block,
    reorder: Reorder | None = None,
) -> SearchDocsTool:
    """The search_docs tool bound to a retriever and one run's ledger; call it with the arguments dict."""
    return SearchDocsTool(retriever, ledger, counter, max_tokens, order, jaccard_threshold, render, reorder=reorder)


def search_first_arguments(question: str, k: int = DEFAULT_K) -> dict[str, Any]:
    """search_docs' arguments when smoldocs searches the question itself (the search-first step)."""
    return {"query": question.strip()[:MAX_QUERY_CHARS], "k": k}


def search_first(
    retriever: Retriever, ledger: Ledger, counter: Counter, question: str, k: int = DEFAULT_K,
    max_tokens: int = DEFAULT_MAX_TOKENS, reorder: Reorder | None = None,
) -> SearchResult:
    """The search-first step outside an agent turn (the eval's probe, quote_eval): the question as the query."""
    tool = search_docs_tool(retriever, ledger, counter, max_tokens=max_tokens, reorder=reorder)
    return tool(search_first_arguments(question, k))


def _reasons(packed: PackedContext) -> str:
    return ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in packed.dropped_by_reason().items() if n)
