"""The rule-made labelled claims: made from docs_corpus chunks by rules, deterministically; a regression check.

The thresholds are fitted on the hand-labelled set (benchmarks.fitting.handlabelled): negatives made by the same kind of rules
that catch them say little about real claims.
"""

from __future__ import annotations

import json
import os
import random
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rag.verification.claims import split_claims
from rag.verification.claim_terms import identifiers, jaccard, terms
from rag.types import Chunk

SEED = 20261129
ROOT = Path(__file__).resolve().parents[2]
CALIBRATION_FILE = ROOT / "tests" / "data" / "claims_calibration.jsonl"
PARAPHRASE_FILE = ROOT / "tests" / "data" / "claims_paraphrases.json"
SUPPORTED_KINDS = ("copied", "trimmed", "paraphrased")
UNSUPPORTED_KINDS = ("other_chunk", "number_changed", "negation_flipped", "identifier_swapped")
MIN_WORDS, MAX_WORDS = 6, 60
TRAIN_SHARE = 0.5  # of documents; a document's items all go to one split so test chunks are never seen in fitting
DUPLICATE_COVERAGE = 0.8  # an "other chunk" claim this well covered by the target chunk may be true: left out

_NEGATION_EDITS: tuple[tuple[str, str], ...] = (
    (r"\bdoes not\b", "does"), (r"\bdo not\b", "do"), (r"\bis not\b", "is"), (r"\bare not\b", "are"),
    (r"\bcannot\b", "can"), (r"\bnever\b", "always"), (r"\bdoesn't\b", "does"), (r"\bdon't\b", "do"),
    (r"\bisn't\b", "is"), (r"\baren't\b", "are"), (r"\bwon't\b", "will"), (r"\bnot\b ", ""),
    (r"\bis\b", "is not"), (r"\bare\b", "are not"), (r"\bcan\b", "cannot"), (r"\bmust\b", "must not"),
    (r"\bshould\b", "should not"), (r"\bwill\b", "will not"), (r"\bdoes\b", "does not"), (r"\balways\b", "never"),
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]\d)")
_CLAUSE = re.compile(r",\s+|;\s+|\s+(?:and|but|because|so|which|while|when)\s+")


@dataclass(frozen=True)
class Item:
    """One labelled (claim, chunk) pair."""

    id: str
    kind: str  # one of SUPPORTED_KINDS or UNSUPPORTED_KINDS
    label: str  # supported | unsupported
    split: str  # train | test
    claim: str
    chunk: Chunk
    source: str  # the chunk sentence the claim was made from ("" for other_chunk: it came from elsewhere)

    def to_json(self) -> dict:
        return {
            "type": "item", "id": self.id, "kind": self.kind, "label": self.label, "split": self.split,
            "claim": self.claim, "source": self.source, "chunk_id": self.chunk.chunk_id,
        }

    @classmethod
    def from_json(cls, d: dict, chunk: Chunk) -> "Item":
        return cls(d["id"], d["kind"], d["label"], d["split"], d["claim"], chunk, d["source"])


def source_sentences(chunk: Chunk) -> list[str]:
    """The chunk's factual prose sentences of a usable length: what claims are made from."""
    out = []
    for claim in split_claims(chunk.text, keep_markers=True):
        words = claim.text.split()
        if claim.factual and claim.kind != "heading" and MIN_WORDS <= len(words) <= MAX_WORDS and "|" not in claim.text:
            out.append(claim.text)
    return out


def build_items(chunks: Sequence[Chunk], paraphrases: Sequence[dict], seed: int = SEED) -> list[Item]:
    """Every labelled item, in a fixed order; the same chunks and paraphrases give the same items."""
    rng = random.Random(seed)
    docs = sorted({c.doc_id for c in chunks})
    rng.shuffle(docs)
    train_docs = set(docs[: round(len(docs) * TRAIN_SHARE)])
    sentences_of = {c.chunk_id: source_sentences(c) for c in chunks}
    pool = sorted({t for c in chunks for _, _, t in _identifier_spans(c.text)})
    by_source = {s: c for c in chunks for s in sentences_of[c.chunk_id]}
    items: list[tuple[str, str, Chunk, str]] = []
    for chunk in chunks:
        sentences = sentences_of[chunk.chunk_id]
        if not sentences:
            continue
        picked = rng.sample(sentences, min(2, len(sentences)))
        items.append(("copied", picked[0], chunk, picked[0]))
        trimmed = _trim(picked[-1])
        if trimmed:
            items.append(("trimmed", trimmed, chunk, picked[-1]))
        numbered = [s for s in sentences if _NUMBER.search(s)]
        if numbered:
            source = rng.choice(numbered)
            items.append(("number_changed", _change_number(source, rng), chunk, source))
        flippable = [(s, f) for s in sentences if (f := _flip_negation(s))]
        if flippable and rng.random() < 0.8:
            source, flipped = rng.choice(flippable)
            items.append(("negation_flipped", flipped, chunk, source))
        swappable = [s for s in sentences if _identifier_spans(s)]
        if swappable:
            source = rng.choice(swappable)
            swapped = _swap_identifier(source, chunk, pool, rng)
            if swapped:
                items.append(("identifier_swapped", swapped, chunk, source))
        for other in _other_claims(chunk, chunks, sentences_of, rng):
            items.append(("other_chunk", other, chunk, ""))
    for entry in paraphrases:
        paraphrased = by_source.get(entry["source"])
        if paraphrased is not None:
            items.append(("paraphrased", entry["paraphrase"], paraphrased, entry["source"]))
    out = []
    for i, (kind, claim, chunk, source) in enumerate(items):
        label = "supported" if kind in SUPPORTED_KINDS else "unsupported"
        split = "train" if chunk.doc_id in train_docs else "test"
        out.append(Item(f"c{i:04d}", kind, label, split, claim, chunk, source))
    return out


def _trim(sentence: str) -> str:
    """The sentence's first clause, as a short answer would state it; "" if it has no clause to cut."""
    for m in _CLAUSE.finditer(sentence):
        head = sentence[: m.start()].rstrip(" ,;:")
        if len(head.split()) >= MIN_WORDS and "(" not in head[-20:] and head.count("`") % 2 == 0:
            return head + "."
    return ""


def _change_number(sentence: str, rng: random.Random) -> str:
    matches = list(_NUMBER.finditer(sentence))
    m = rng.choice(matches)
    old = m.group()
    if "." in old:
        new = f"{float(old) * rng.choice((2, 0.5, 10)):g}"
    else:
        value = int(old)
        new = str(rng.choice([v for v in (value * 2, value + 1, value * 10, max(value // 2, 3)) if v != value]))
    return sentence[: m.start()] + new + sentence[m.end() :]


def _flip_negation(sentence: str) -> str:
    """The sentence with its first negation removed or a negation inserted; "" if no edit applies."""
    for pattern, replacement in _NEGATION_EDITS:
        m = re.search(pattern, sentence)
        if m and sentence[: m.start()].count("`") % 2 == 0:  # not inside a code span
            return sentence[: m.start()] + replacement + sentence[m.end() :]
    return ""


def _identifier_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of each code-ish token, as written (backticks and punctuation left out)."""
    spans = []
    for m in re.finditer(r"\S+", text):
        raw = m.group()
        token = raw.strip("`.,;:!?()[]{}\"'*")
        if len(token) >= 2 and identifiers(token):
            start = m.start() + raw.index(token)
            spans.append((start, start + len(token), token))
    return spans


def _swap_identifier(sentence: str, chunk: Chunk, pool: Sequence[str], rng: random.Random) -> str:
    """The sentence with one identifier replaced by another: one the chunk also names when it has one."""
    start, end, old = rng.choice(_identifier_spans(sentence))
    lowered = sentence.lower()
    in_chunk = sorted({t for _, _, t in _identifier_spans(chunk.text)})
    for options in (in_chunk, pool):
        options = [t for t in options if t.lower() not in lowered and old.lower() not in t.lower()]
        if options:
            return sentence[:start] + rng.choice(options) + sentence[end:]
    return ""


def _other_claims(
    chunk: Chunk, chunks: Sequence[Chunk], sentences_of: dict[str, list[str]], rng: random.Random
) -> list[str]:
    """A sentence from a random chunk of another document or, as often, from the lexically nearest other chunk."""
    words = terms(chunk.text).words
    others = [c for c in chunks if c.chunk_id != chunk.chunk_id and sentences_of[c.chunk_id]]
    if not others:
        return []
    far = rng.choice([c for c in others if c.doc_id != chunk.doc_id] or others)
    near = max(others, key=lambda c: (jaccard(words, terms(c.text).words), c.chunk_id))
    sentence = rng.choice(sentences_of[rng.choice((far, near)).chunk_id])
    covered = terms(sentence).words & words
    if sentence in chunk.text or len(covered) >= DUPLICATE_COVERAGE * max(1, len(terms(sentence).words)):
        return []
    return [sentence]


def load_paraphrases(path: Path = PARAPHRASE_FILE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def write_items(items: Sequence[Item], path: Path = CALIBRATION_FILE) -> None:
    """JSON lines: each chunk once (`"type": "chunk"`), then the items naming them; temp file, then moved into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks = {item.chunk.chunk_id: item.chunk for item in items}
    records = [_chunk_record(c) for c in chunks.values()] + [item.to_json() for item in items]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    os.chmod(tmp, 0o644)  # mkstemp makes it private; this is a shared test file
    os.replace(tmp, path)


def load_items(path: Path = CALIBRATION_FILE) -> list[Item]:
    chunks: dict[str, Chunk] = {}
    items: list[Item] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line) if line.strip() else None
            if record and record["type"] == "chunk":
                chunks[record["chunk_id"]] = Chunk(
                    record["chunk_id"], record["doc_id"], record["uri"], record["text"], tuple(record["heading_path"])
                )
            elif record:
                items.append(Item.from_json(record, chunks[record["chunk_id"]]))
    return items


def _chunk_record(c: Chunk) -> dict:
    return {"type": "chunk", "chunk_id": c.chunk_id, "doc_id": c.doc_id, "uri": c.uri,
            "heading_path": list(c.heading_path), "text": c.text}
