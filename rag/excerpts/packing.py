"""Context packing: ranked hits become numbered excerpts `[n] <uri>` under a token budget, one ledger per run."""

from __future__ import annotations

import datetime as dt
import operator
import re
import threading
from collections import Counter as Tally
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, runtime_checkable

from models.protocols import Counter
from rag.citations import Citation
from rag.errors import BudgetError
from rag.excerpts.near_duplicates import check_threshold, jaccard, shingles
from rag.printable import one_line

ORDERS: tuple[str, ...] = ("rank", "lost_in_middle")
REASONS: tuple[str, ...] = ("duplicate_id", "duplicate_text", "near_duplicate", "expired", "over_budget")
DUPLICATE_REASONS = frozenset({"duplicate_id", "duplicate_text", "near_duplicate"})
BLOCK_SEPARATOR = "\n"  # blocks end in "\n"; one more makes the blank line between them
OUTDATED_TAG = "[outdated]"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class HitLike(Protocol):
    """What the packer reads of a hit: any object with these five is one (the ag.08 contract); rag.types.Hit is.
    Read-only, so frozen dataclasses match."""

    @property
    def chunk_id(self) -> str: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def uri(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def score(self) -> float: ...


@runtime_checkable
class StandingHit(HitLike, Protocol):
    """A hit that also carries its document's standing (rag.types.Hit): outdated ones are tagged, expired ones
    left out. A caller's hit with only HitLike's five fields is current and never expires."""

    @property
    def outdated(self) -> bool: ...

    @property
    def expires(self) -> str | None: ...


def block(n: int, hit: HitLike) -> str:
    """One excerpt as the model sees it: `[n] <uri>` (`[outdated]` after it when it is), then the whole chunk text.

    A line break in a file name is escaped (rag.printable.one_line): the header stays one line.
    """
    tag = f" {OUTDATED_TAG}" if _outdated(hit) else ""
    return f"[{n}] {one_line(hit.uri)}{tag}\n{hit.text}\n"


# The provenance line under `[n] <uri>` in a sourced block; `smoldocs check --shown` reads the source id back.
_PROVENANCE = re.compile(
    r"^\(source: (?P<source>.+?); section: (?P<section>.*); (?P<where>lines \d+-\d+|pages? \d+(?:-\d+)?)\)$"
)


class Located(HitLike, Protocol):
    """A hit that says where in its file it is (rag.types.Hit and Chunk's heading and line fields)."""

    @property
    def heading(self) -> str: ...

    @property
    def where(self) -> str:
        """ "lines 3-9", or "page 4" / "pages 4-5" for a paged document (PDF)."""
        ...


def provenance(chunk: Located) -> str:
    """One line naming where an excerpt comes from: its source id (chunk id), heading path and lines (or pages)."""
    return f"(source: {one_line(chunk.chunk_id)}; section: {one_line(chunk.heading) or '(top)'}; {chunk.where})"


def source_of(line: str) -> str | None:
    """The source id a provenance line names, or None when `line` is not one."""
    found = _PROVENANCE.match(line.strip())
    return found.group("source") if found else None


def sourced_block(n: int, hit: Located) -> str:
    """An excerpt for readers that fetch more by id (get_document, MCP clients): `[n] <uri>`, provenance, text."""
    head, _, text = block(n, hit).partition("\n")
    return f"{head}\n{provenance(hit)}\n{text}"


def join_blocks(blocks: Sequence[str]) -> str:
    """The context: blocks separated by one blank line."""
    return BLOCK_SEPARATOR.join(blocks)


def lost_in_middle(items: Sequence) -> list:
    """Best items at both ends, weakest in the middle: 1 3 5 ... 6 4 2."""
    return list(items[0::2]) + list(reversed(items[1::2]))


def _normalized(text: str) -> str:
    return " ".join(text.casefold().split())


class Ledger:
    """Citation numbers for one agent run: 1, 2, ... in order of first inclusion; a chunk keeps its number."""

    def __init__(self) -> None:
        # Re-entrant so the packer can hold it for a whole assembly while calling peek and cite.
        self.lock = threading.RLock()
        self._by_chunk: dict[str, Citation] = {}
        self._order: list[Citation] = []

    def peek(self, hit: HitLike) -> int:
        """The number `hit` has, or would get if cited now; records nothing."""
        with self.lock:
            known = self._by_chunk.get(hit.chunk_id)
            return known.n if known is not None else len(self._order) + 1

    def cite(self, hit: HitLike) -> Citation:
        """Record `hit` (once) and return its citation."""
        with self.lock:
            known = self._by_chunk.get(hit.chunk_id)
            if known is not None:
                return known
            citation = Citation(len(self._order) + 1, hit.chunk_id, hit.doc_id, hit.uri)
            self._by_chunk[hit.chunk_id] = citation
            self._order.append(citation)
            return citation

    def citations(self) -> list[Citation]:
        """Every citation of the run, by number."""
        with self.lock:
            return list(self._order)

    def __len__(self) -> int:
        with self.lock:
            return len(self._order)

    def _rollback(self, size: int) -> None:
        # Forget citations recorded after the ledger had `size` entries (an assembly that failed).
        with self.lock:
            for citation in self._order[size:]:
                del self._by_chunk[citation.chunk_id]
            del self._order[size:]


@dataclass(frozen=True)
class Omission:
    """A hit left out of the context, and why."""

    rank: int  # 1-based position in the hits given to the packer
    chunk_id: str
    uri: str
    reason: str  # one of REASONS
    tokens: int | None = None  # over_budget: the count the context would have had with this hit
    duplicate_of: int | None = None  # near_duplicate: the excerpt number of the kept twin

    @property
    def why(self) -> str:
        """The reason in words: `over budget`, `near-duplicate of [2]`."""
        if self.reason == "near_duplicate" and self.duplicate_of is not None:
            return f"near-duplicate of [{self.duplicate_of}]"
        return self.reason.replace("_", " ")


@dataclass(frozen=True)
class PackedContext:
    """The packed excerpts and what was left out; `tokens` is the counter's count of the whole `text`."""

    query: str
    text: str
    tokens: int
    max_tokens: int
    used: tuple = ()  # the hits kept, in rank order
    omissions: tuple[Omission, ...] = ()
    order: str = "rank"

    @property
    def dropped(self) -> int:
        return len(self.omissions)

    def dropped_by_reason(self) -> dict[str, int]:
        tally = Tally(o.reason for o in self.omissions)
        return {reason: tally[reason] for reason in REASONS}

    @property
    def dropped_as_duplicate(self) -> int:
        return sum(o.reason in DUPLICATE_REASONS for o in self.omissions)

    @property
    def dropped_for_budget(self) -> int:
        return sum(o.reason == "over_budget" for o in self.omissions)


@dataclass
class Packer:
    """Greedy packing in rank order, counting the whole candidate context at every step."""

    counter: Counter
    ledger: Ledger = field(default_factory=Ledger)
    render: Callable[[int, HitLike], str] = block  # or sourced_block

    def assemble(
        self,
        query: str,
        hits: Sequence[HitLike],
        max_tokens: int,
        order: str = "rank",
        jaccard_threshold: float | None = None,
        today: dt.date | None = None,
    ) -> tuple[PackedContext, list[Citation]]:
        """Pack `hits` into at most `max_tokens`; returns the context and the citations of its blocks.

        Hits whose document expired before `today` are left out; with `jaccard_threshold`, so is a hit whose
        5-shingles are that similar to a kept one's (unless the two differ in numbers or in being outdated:
        a disagreement stays visible).
        """
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise BudgetError(f"the token budget must be a whole number, not {max_tokens!r}")
        if max_tokens < 0:
            raise BudgetError(f"the token budget cannot be negative ({max_tokens}): give 0 or more tokens")
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}: choose one of {', '.join(ORDERS)}")
        threshold = check_threshold(jaccard_threshold)
        today = today or dt.date.today()
        arrange = lost_in_middle if order == "lost_in_middle" else list
        # Held for the whole assembly: the number a block prints and the number recorded must agree.
        with self.ledger.lock:
            size_before = len(self.ledger)
            try:
                return self._assemble(query, hits, max_tokens, order, arrange, threshold, today)
            except BaseException:
                self.ledger._rollback(size_before)
                raise

    def _assemble(
        self, query, hits, max_tokens, order, arrange, threshold, today
    ) -> tuple[PackedContext, list[Citation]]:
        kept_blocks: list[str] = []
        kept_hits: list = []
        citations: list[Citation] = []
        omissions: list[Omission] = []
        ids: set[str] = set()
        texts: set[str] = set()
        twins: list[tuple[int, frozenset, frozenset, bool]] = []  # (number, shingles, numbers, outdated) kept
        text, tokens = "", None
        for rank, hit in enumerate(hits, start=1):
            normalized = _normalized(hit.text)
            if hit.chunk_id in ids:
                omissions.append(Omission(rank, hit.chunk_id, hit.uri, "duplicate_id"))
                continue
            if normalized in texts:
                omissions.append(Omission(rank, hit.chunk_id, hit.uri, "duplicate_text"))
                continue
            if _expired(hit, today):
                omissions.append(Omission(rank, hit.chunk_id, hit.uri, "expired"))
                continue
            signature = None
            if threshold is not None:
                signature = (shingles(hit.text), frozenset(_NUMBER.findall(hit.text)), _outdated(hit))
                twin = _near_duplicate_of(signature, twins, threshold)
                if twin is not None:
                    omissions.append(Omission(rank, hit.chunk_id, hit.uri, "near_duplicate", duplicate_of=twin))
                    continue
            candidate_blocks = [*kept_blocks, self.render(self.ledger.peek(hit), hit)]
            candidate = join_blocks(arrange(candidate_blocks))
            count = self._count(candidate)
            if count > max_tokens:
                # A later, shorter chunk may still fit: keep going.
                omissions.append(Omission(rank, hit.chunk_id, hit.uri, "over_budget", count))
                continue
            citation = self.ledger.cite(hit)
            citations.append(citation)
            if signature is not None:
                twins.append((citation.n, *signature))
            kept_blocks = candidate_blocks
            kept_hits.append(hit)
            ids.add(hit.chunk_id)
            texts.add(normalized)
            text, tokens = candidate, count
        if tokens is None:
            tokens = self._count(text)
        packed = PackedContext(query, text, tokens, max_tokens, tuple(kept_hits), tuple(omissions), order)
        return packed, citations

    def _count(self, text: str) -> int:
        count = self.counter.count(text)
        try:
            if isinstance(count, bool):
                raise TypeError
            count = operator.index(count)  # int or numpy integer; never a float or None
        except TypeError:
            raise TypeError(f"token counter returned {count!r}; expected a whole number of tokens") from None
        if count < 0:
            raise ValueError(f"token counter returned a negative count ({count})")
        return count


def _outdated(hit: HitLike) -> bool:
    return isinstance(hit, StandingHit) and bool(hit.outdated)


def _expired(hit: HitLike, today: dt.date) -> bool:
    expires = hit.expires if isinstance(hit, StandingHit) else None
    if not expires:
        return False
    try:
        return dt.date.fromisoformat(str(expires)) < today
    except ValueError:
        return False  # rag.ingest.sources only stores ISO dates; anything else was never an expiry


def _near_duplicate_of(signature, twins, threshold: float) -> int | None:
    """The number of the first kept excerpt this one nearly repeats, or None."""
    grams, numbers, outdated = signature
    for n, other_grams, other_numbers, other_outdated in twins:
        if numbers != other_numbers or outdated != other_outdated:
            continue  # they disagree, or one is outdated: both stay so the difference shows
        if jaccard(grams, other_grams) >= threshold:
            return n
    return None
