"""What the quote scorer knows about each candidate sentence of the shown excerpts, as a row of numbers.

Chosen by 2-fold cross-validation inside the fit split (even-numbered docs_corpus questions, 74 answerable),
evidence in top 1 / top 3: cosine + coverage of the bare sentence (the old scorer) 26 / 44; coverage and cosine
under the heading path 32 / 49; + 1/excerpt rank 36 / 54; + a number for a "how many" question 37 / 54. Since
2026-12-05 coverage also counts the document's file name as context (document_words): evidence sentence on the
man-page packages, tool-manuals (fit) 0.509 -> 0.527, machine-manuals (held back) 0.500 -> 0.526, no other package
lower.
Tried and left out: sentence BM25 over the shown sentences (26 / 41 with cosine + coverage), the neighbouring
sentences in the embedded text (no gain), the heading's own cosine (no gain), a code cue for "which command"
questions (no gain), idf-weighted coverage from the index (38 / 53: within noise, and it needs index statistics).
No cross-encoder ships in a PyPI package for llama.cpp, so none was tried. The weights (rag.tuned.QUOTE_WEIGHTS)
were refitted on the real-docs fit packages by `python -m benchmarks.realdocs refit`. `python -m benchmarks.fitting.quote_eval` reports the
chosen set against the old scorer on both splits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from models.protocols import Embedder, QuoteQuestionEmbedder
from rag import markers
from rag.citations import CitationLike, Lookup, chunk_of
from rag.types import Chunk
from rag.verification.claim_terms import terms
from rag.ingest.formats import syntax_for
from rag.verification.claims import ITEM, Claim, split_claims
from rag.verification.markup import readable
from rag.verification.support import embed_cached

FEATURES = ("coverage", "cosine", "rank", "number")
# "how many", "how big", "what size": the answer is a number.
_WANTS_NUMBER = re.compile(
    r"\bhow (?:many|much|big|large|long|fast|often|small|far)\b|\bwhat (?:size|number|percentage|share|value)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Candidate:
    """One sentence of excerpt `n`, which was the `rank`-th shown excerpt (1 = first)."""

    n: int
    rank: int
    sentence: str
    heading: str = ""  # the chunk's heading path, "A > B"
    before: str = ""  # the sentence before, when this one refers back to it ("This ...", "If they ...")
    after: str = ""  # what a sentence ending in ":" introduces, or nothing
    header: str = ""  # a table row's header row
    document: str = ""  # its document's file name as words (`xz` of man1/xz.1): what every sentence of it is about

    @property
    def passage(self) -> tuple[str, ...]:
        """The lines shown when the sentence is quoted: a table's header row, the sentence after the one before
        it, the lines it introduces."""
        said = f"{self.before} {self.sentence}" if self.before else self.sentence
        return tuple(p for p in (self.header, said, self.after) if p)

    @property
    def in_context(self) -> str:
        """The sentence as it is embedded and matched: under its heading path."""
        return f"{self.heading}: {self.sentence}" if self.heading else self.sentence


def candidates(shown: Mapping[int, CitationLike] | Iterable[CitationLike], lookup: Lookup) -> list[Candidate]:
    """Every quotable sentence of the shown, resolvable excerpts, in excerpt order, each with the context a reader
    needs (quote_context). The excerpt is read as rag.verification.markup.readable renders it: no markup."""
    citations = shown.values() if isinstance(shown, Mapping) else shown
    out: list[Candidate] = []
    rank = 0
    for citation in sorted(citations, key=lambda c: c.n):
        chunk = chunk_of(citation, lookup)
        if isinstance(chunk, str):
            continue  # never quote text the index no longer holds as shown
        rank += 1
        heading = " > ".join(chunk.heading_path)
        text = quotable_text(chunk)
        claims = split_claims(text, keep_markers=True)
        for i, claim in enumerate(claims):
            # A sentence that ends with ":" introduces a code block or list, and often is the answer itself
            # ("... cosine similarity equals the dot product, so ...:"); a literal `[1]` would read as a citation.
            quotable = claim.factual or claim.text.rstrip().endswith(":")
            if not quotable or claim.kind == "heading" or not claim.text or markers.find(claim.text):
                continue
            if len(claim.text.split()) < MIN_QUOTE_WORDS and not claim.text.endswith(":"):
                continue  # a label or a name alone ("`small-black`") answers nothing
            if is_title_line(claim, text, chunk.heading_path) or is_navigation(_line(text, claim.start, claim.end)):
                continue
            context = quote_context(text, claims, i)
            if claim.text.rstrip().endswith(":") and not context[1]:
                continue  # "... check it out using git-switch(1):" with nothing after it in the excerpt: it promises, says nothing
            out.append(Candidate(citation.n, rank, claim.text, heading, *context, document=document_words(chunk.doc_id)))
    return out


def document_words(doc_id: str) -> str:
    """A document's file name without folder and suffixes, `-` and `_` as spaces: `man1/dpkg-query.1` is "dpkg query".
    A man page's questions name its tool ("what does xz --extreme do"), and the option that answers seldom repeats
    it, while the page's general sentences do; counted as every sentence's context, the name favours none of them."""
    return re.sub(r"[-_]", " ", doc_id.rsplit("/", 1)[-1].split(".", 1)[0])


def quotable_text(chunk: Chunk) -> str:
    """The chunk's text as quotes show it: rag.verification.markup.readable under the chunk's document syntax."""
    return readable(chunk.text, syntax_for(chunk.doc_id, chunk.text))


# A sentence whose first words point back ("This is why...", "If they come first...") needs the one before it.
_REFERS_BACK = re.compile(
    r"^(?:(?:and|but|or|so|if|when|then|thus|hence|also|however|otherwise|therefore|because|since|unless|"
    r"while|although|in|for|with|without|of|by|at|on|like|unlike|as)\b[\s,]*){0,2}"
    r"(?:this|these|those|that|such|it|its|they|them|their|he|she|his|her|both|either|neither)\b",
    re.IGNORECASE,
)
# A sentence that goes on from the one before it without repeating its words: "Instead, use a task queue.", "To do
# this, unset retry_include_ip_address." Docs state a problem and then its fix; the problem sentence shares the
# question's words and is quoted, the fix is the next sentence (fit packages, 200 quotes that missed the evidence
# sentence read by hand: the next sentence held it for 15 of the 127 real misses).
_GOES_ON = re.compile(r"^(?:instead|otherwise|alternatively)\b|^(?:\S+\s+){0,5}?(?:this|these|such|latter|former)\b",
                      re.IGNORECASE)
MAX_FOLLOW_WORDS = 35  # a longer next sentence is a new point, not the end of this one
MIN_QUOTE_WORDS = 3
# Code after a ":" sentence is shown inline, one span, only this short: at 60 words 6 of 187 shown claims on
# postgresql-doc-15 were weak or unsupported, most of them a sentence with a long code span after it.
MAX_CODE_WORDS = 20
MAX_CONTEXT_WORDS = 60  # what a ":" sentence brings at most (~80 tokens: a short list or a few code lines)
_TITLE_LINE = re.compile(r"^[\w.:+-]+(?:,\s*[\w.:+-]+)*(?:\(\d\w*\))?\s+(?:-|\u2013|\u2014)\s+\S")  # "git-mergetool - Run..."
_NAVIGATION = frozenset("prev previous next up home top contents index back forward".split())
_CELL_SPLIT = re.compile(r"\s*\|\s*")


def is_title_line(claim: Claim, text: str, heading_path: Sequence[str]) -> bool:
    """A page's title or a heading that lost its markup: the name-dash-summary line of a man page or reference
    page, a line the heading path already holds, or a short line standing alone with no sentence punctuation."""
    t = claim.text.strip()
    if t.rstrip(".:").strip().lower() in {h.strip().lower() for h in heading_path}:
        return True
    if t.endswith((".", "!", "?", ":", ";")) or " | " in t:
        return False
    alone = text[claim.start:claim.end].strip() == t and _paragraph(text, claim.start, claim.end).strip() == t
    return bool(_TITLE_LINE.match(t)) or (alone and len(t.split()) <= 8)


def is_navigation(sentence: str) -> bool:
    """A row of navigation links ("Prev | Up | Next", "7.7. VALUES Lists | Home | Chapter 8")."""
    cells = [c.lower() for c in _CELL_SPLIT.split(sentence.strip().strip("|")) if c]
    return len(cells) >= 2 and any(c in _NAVIGATION for c in cells)


def quote_context(text: str, claims: Sequence[Claim], i: int) -> tuple[str, str, str]:
    """(before, after, header) of claims[i] in `text`: the sentence before when it refers back to it (same
    paragraph); the list or code a ":" sentence introduces (cut at an item or line under MAX_CONTEXT_WORDS), or else
    the next sentence when it goes on from this one (same paragraph, at most MAX_FOLLOW_WORDS); and the header row
    of a table row."""
    claim = claims[i]
    before = after = header = ""
    prev = claims[i - 1] if i > 0 else None
    if prev is not None and _same_paragraph(text, prev, claim) and _REFERS_BACK.match(claim.text) and not prev.text.endswith(":"):
        before = prev.text
    nxt = claims[i + 1] if i + 1 < len(claims) else None
    if claim.text.endswith(":"):
        after = _introduced(text, claim.end)
    elif (nxt is not None and _same_paragraph(text, claim, nxt) and nxt.factual and len(nxt.text.split()) <= MAX_FOLLOW_WORDS
          and (_REFERS_BACK.match(nxt.text) or _GOES_ON.match(nxt.text)) and not nxt.text.endswith(":")):
        after = nxt.text
    if " | " in claim.text or claim.text.startswith("|"):
        header = _table_header(text, claim.start)
    return before, after, header


def _same_paragraph(text: str, first: Claim, second: Claim) -> bool:
    """Two sentences (not items, headings or code) one after the other in one paragraph."""
    return first.kind == "sentence" and second.kind == "sentence" and "\n\n" not in text[first.end:second.start]


def _line(text: str, start: int, end: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : text.find("\n", end) if "\n" in text[end:] else len(text)]


def _paragraph(text: str, start: int, end: int) -> str:
    a = text.rfind("\n\n", 0, start)
    b = text.find("\n\n", end)
    return text[a + 2 if a >= 0 else 0 : b if b >= 0 else len(text)]


def _introduced(text: str, end: int) -> str:
    """The list or code that follows a ":" sentence ending at `end`: whole items, or code lines as one inline span,
    while they fit under MAX_CONTEXT_WORDS (a first item too long is cut at a clause); nothing when prose follows."""
    lines = text[end:].split("\n")
    if lines[0].strip():
        return ""
    out: list[str] = []
    code: list[str] = []
    kind, fenced, words = "", False, 0
    for line in lines[1:]:
        body = line.strip()
        if body.startswith(("```", "~~~")):
            if fenced:
                break  # one code block
            fenced, kind = True, kind or "code"
            if kind != "code":
                break
            continue
        if not body:
            continue
        n = len(body.split())
        if fenced or (line[:1].isspace() and kind in ("", "code")):
            if words + n > MAX_CONTEXT_WORDS:
                break
            code.append(body)
            kind, words = "code", words + n
        elif kind == "list" and line[:1].isspace():  # an item's continuation line
            if words + n > MAX_CONTEXT_WORDS:
                out.pop()
                break
            out[-1] += " " + body
            words += n
        elif ITEM.match(body) and kind in ("", "list"):
            if words + n > MAX_CONTEXT_WORDS:
                if not out:
                    out.append(_clause_head(body, MAX_CONTEXT_WORDS))
                break
            out.append(body)
            kind, words = "list", words + n
        else:
            break  # prose again
    if code and words <= MAX_CODE_WORDS:  # longer code reads badly inline and no longer verifies against its excerpt
        out.append("`" + " ".join(code).replace("`", "'") + "`")
    return "\n".join(o for o in out if o)


def _clause_head(text: str, max_words: int) -> str:
    """The longest head of `text` ending at a clause boundary (, ; :) within `max_words` words; "" when none."""
    head = " ".join(text.split()[:max_words])
    cut = max(head.rfind(", "), head.rfind("; "), head.rfind(": "))
    return head[:cut + 1] if cut > 0 else ""



def _table_header(text: str, start: int) -> str:
    """The first row of the table (consecutive `a | b` rows, blank lines between them allowed) holding offset
    `start`; nothing when that is the quoted row or the table runs from the chunk's start (its header may be in
    the chunk before)."""
    lines = text[:start].split("\n")[:-1]
    header = ""
    for line in reversed(lines):
        body = line.strip()
        if not body or _RULE_ROW.match(body):
            continue
        if " | " not in body and not body.startswith("|"):
            return header
        header = body
    return ""


_RULE_ROW = re.compile(r"^\|?\s*:?-{2,}")


def feature_matrix(question: str, found: Sequence[Candidate], embedder: Embedder | None) -> np.ndarray:
    """One row per candidate, one column per name in FEATURES, each in [0, 1] (cosine: 0 without an embedder)."""
    out = np.zeros((len(found), len(FEATURES)), dtype=np.float32)
    if not found:
        return out
    asked = terms(question).words
    wants_number = bool(_WANTS_NUMBER.search(question))
    for i, c in enumerate(found):
        have = terms(f"{c.heading} {c.sentence}").words | terms(c.document).words
        out[i, 0] = len(asked & have) / len(asked) if asked else 0.0
        out[i, 2] = 1.0 / c.rank
        out[i, 3] = float(wants_number and bool(_DIGIT.search(c.sentence)))
    if embedder is not None:
        texts = [c.in_context for c in found]
        vectors = embed_cached([question, *texts], embedder)
        out[:, 1] = [max(0.0, float(vectors[t] @ vectors[question])) for t in texts]
    return out


def quote_query_vector(embedder: Embedder | None, question: str) -> np.ndarray | None:
    """The question's vector from the embedder's quote encoder (models.query_tower), or None when it has none."""
    return embedder.embed_quote_query(question) if isinstance(embedder, QuoteQuestionEmbedder) else None


def tuned_cosines(question: str, found: Sequence[Candidate], embedder: Embedder | None) -> np.ndarray | None:
    """Each candidate's cosine (floored at 0) with the quote encoder's question vector, its sentence under its
    heading path embedded as for the cosine feature; None when the embedder has no quote encoder."""
    vector = quote_query_vector(embedder, question) if found and embedder is not None else None
    if vector is None or embedder is None:
        return None
    texts = [c.in_context for c in found]
    vectors = embed_cached(texts, embedder)
    return np.array([max(0.0, float(vectors[t] @ vector)) for t in texts], dtype=np.float32)
