"""The get_document tool: one chunk by its source id, with its provenance, numbered in the run's ledger."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

import jsonschema

from models.protocols import Counter
from rag.errors import BudgetError
from rag.excerpts.packing import Ledger, Omission, PackedContext, sourced_block
from rag.excerpts.search_tool import DEFAULT_MAX_TOKENS, NO_RESULTS, SearchResult, schema_errors
from rag.types import Hit, Retriever

GET_DOCUMENT_NAME = "get_document"
SOURCE_NOT_FOUND = "source_not_found"
MAX_SOURCE_ID_CHARS = 500
GET_DOCUMENT_DESCRIPTION = (
    "Read one excerpt whole by its source id, a chunk id such as docs/kv-cache.md#3. "
    "Returns it numbered `[n] <uri>` with its section and lines; cite it as [n]."
)
GET_DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "source_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SOURCE_ID_CHARS,
            "description": "The chunk id of the excerpt, such as docs/kv-cache.md#3.",
        },
    },
    "required": ["source_id"],
    "additionalProperties": False,
}
USAGE = 'expected {"source_id": "<a chunk id such as docs/kv-cache.md#3>"}'

_VALIDATOR = jsonschema.Draft202012Validator(GET_DOCUMENT_SCHEMA)


def document_problem(arguments: Any) -> str | None:
    """One clear message naming what is wrong with get_document arguments, or None when they are valid."""
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            return f"invalid {GET_DOCUMENT_NAME} arguments: not valid JSON ({exc}); {USAGE}"
    problems = schema_errors(arguments, _VALIDATOR)
    if not problems and not arguments["source_id"].strip():
        problems = ["source_id: must name a chunk, not only spaces"]
    if not problems:
        return None
    return f"invalid {GET_DOCUMENT_NAME} arguments: " + "; ".join(problems) + f"; {USAGE}"


@dataclass(frozen=True)
class DocumentResult(SearchResult):
    """What one get_document call returns; `not_found` marks a `source_not_found` answer (a result, not an error)."""

    not_found: bool = False


@dataclass
class GetDocumentTool:
    """get_document for one run: the chunk it shows is cited in the run's ledger, so its `[n]` can be cited."""

    retriever: Retriever
    ledger: Ledger
    counter: Counter
    max_tokens: int = DEFAULT_MAX_TOKENS
    name: str = GET_DOCUMENT_NAME
    schema: dict = field(default_factory=lambda: GET_DOCUMENT_SCHEMA)

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 0:
            raise BudgetError(f"get_document max tokens must be a whole number >= 0, not {self.max_tokens!r}")

    def __call__(self, arguments: Mapping[str, Any] | str) -> DocumentResult:
        """Show one chunk. Bad arguments give an `Error:` result; an unknown id gives `source_not_found`."""
        problem = document_problem(arguments)
        if problem is not None:
            return DocumentResult(text=f"Error: {problem}", error=problem)
        given: Mapping[str, Any] = json.loads(arguments) if isinstance(arguments, (str, bytes)) else arguments
        source_id = given["source_id"].strip()
        chunk = self.retriever.chunk(source_id)
        if chunk is None:
            # The ids are not listed: the model would copy one instead of searching for what it needs.
            text = (
                f"{SOURCE_NOT_FOUND}: no excerpt has the source id {source_id!r}; source ids look like "
                "docs/kv-cache.md#3: search_docs finds the excerpts"
            )
            return DocumentResult(text=text, not_found=True)
        info = self.retriever.source(chunk.doc_id)
        if info.expired():
            # Like search_docs: a document past its expiry date is never shown.
            return DocumentResult(text=f"{NO_RESULTS}: {source_id} belongs to a document that expired on {info.expires}")
        hit = Hit(chunk, 1.0, outdated=info.outdated, expires=info.expires)
        # Held while counting: the number the block prints must be the number recorded.
        with self.ledger.lock:
            text = sourced_block(self.ledger.peek(hit), hit)
            tokens = _whole(self.counter.count(text))
            if tokens > self.max_tokens:
                omission = Omission(1, chunk.chunk_id, chunk.uri, "over_budget", tokens)
                packed = PackedContext(source_id, "", 0, self.max_tokens, (), (omission,))
                note = f"{NO_RESULTS}: {source_id} takes {tokens} tokens, more than the {self.max_tokens} left"
                return DocumentResult(text=note, hits=[hit], packed=packed)
            citation = self.ledger.cite(hit)
        packed = PackedContext(source_id, text, tokens, self.max_tokens, (hit,))
        return DocumentResult(text=text, hits=[hit], packed=packed, citations=[citation])


def _whole(count: Any) -> int:
    if isinstance(count, bool) or not isinstance(count, int) and not hasattr(count, "__index__"):
        raise TypeError(f"token counter returned {count!r}; expected a whole number of tokens")
    return int(count)


def get_document_tool(
    retriever: Retriever, ledger: Ledger, counter: Counter, max_tokens: int = DEFAULT_MAX_TOKENS
) -> GetDocumentTool:
    """The get_document tool bound to a retriever and one run's ledger; call it with the arguments dict."""
    return GetDocumentTool(retriever, ledger, counter, max_tokens)
