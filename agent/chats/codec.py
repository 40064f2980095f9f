"""The one JSON form of events and answers: saved chats, `ask --json` and the eval all write and read it.

Readers are lenient: fields a newer smoldocs wrote are dropped, missing ones take their defaults, and a file from
before typed verdicts (verdicts as plain strings, an `Answer.trace` list) still loads.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.events import (
    EVENT_TYPES,
    Answer,
    AnswerFinished,
    AnswerStatus,
    ContextBuilt,
    Event,
    SearchFinished,
    SearchStarted,
    ToolStep,
)
from agent.turn.decline import Decline
from rag.excerpts.packing import Omission
from rag.types import Chunk, Hit
from rag.verification.verdicts import CitationVerdict, ClaimVerdict, Verdict, Verification

_BY_NAME = {cls.__name__: cls for cls in EVENT_TYPES}


def _known(cls, data: dict) -> dict:
    # Files written by a newer smoldocs may carry fields this one does not know: drop them.
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


_CHUNK_FIRST = ("chunk_id", "doc_id", "uri", "text")  # before the score, as the flat form has always had them
_SEARCH_ONLY = ("bm25_score", "dense_score")  # raw scores the learned order reads (rag.indexing.ordering): not saved


def hit_to_dict(hit: Hit) -> dict:
    """A hit as one flat dict, its chunk's fields beside what search added (the form saved chats always had)."""
    chunk, added = dataclasses.asdict(hit.chunk), dataclasses.asdict(hit)
    del added["chunk"]
    for name in _SEARCH_ONLY:
        del added[name]
    first = {name: chunk.pop(name) for name in _CHUNK_FIRST}
    return {**first, "score": added.pop("score"), **chunk, **added}


def hit_from_dict(data: dict) -> Hit:
    """The Hit `hit_to_dict` wrote."""
    chunk = _known(Chunk, data)
    chunk["heading_path"] = tuple(chunk.get("heading_path", ()))
    added = {name: value for name, value in _known(Hit, data).items() if name != "chunk"}
    return Hit(Chunk(**chunk), **added)


def omission_from(data: Any) -> Omission | None:
    """An omission as saved (a dict); None for one this version cannot read."""
    if isinstance(data, Omission):
        return data
    if not isinstance(data, dict):
        return None
    try:
        return Omission(**_known(Omission, data))
    except TypeError:
        return None


def answer_to_dict(answer: Answer) -> dict:
    """A JSON-ready dict of `answer`: every field (the missing names only when there are some: an answer without
    them reads as before they existed), nested verdicts, and the made-up and unresolved numbers."""
    data = dataclasses.asdict(answer)
    data["unknown"] = list(answer.unknown)
    data["unresolved"] = list(answer.unresolved)
    for key in ("missing_from_docs", "missing_from_excerpts"):  # only with a decline that names something
        if data[key]:
            data[key] = list(data[key])
        else:
            del data[key]
    return data


def verification_to_dict(verification: Verification) -> dict:
    """Every verdict of one checked text (`smoldocs check --json`, the MCP check_citations tool)."""
    return {
        "citations": [dataclasses.asdict(c) for c in verification.citations],
        "claims": [dataclasses.asdict(c) for c in verification.claims],
        "counts": {str(v): n for v, n in verification.counts().items()},
        "made_up": list(verification.made_up),
        "unresolved": list(verification.unresolved),
        "lexical_only": verification.lexical_only,
    }


def answer_from_dict(data: dict) -> Answer:
    """The Answer `answer_to_dict` wrote."""
    fields = _known(Answer, data)
    fields["citations"] = tuple(
        CitationVerdict(**{**_known(CitationVerdict, c), "verdict": Verdict.of(c.get("verdict", ""))})
        for c in data.get("citations", ())
    )
    fields["claims"] = tuple(
        ClaimVerdict(**{**_known(ClaimVerdict, c), "verdict": Verdict.of(c.get("verdict", "")), "citations": tuple(c.get("citations", ()))})
        for c in data.get("claims", ())
    )
    fields["status"] = AnswerStatus.of(str(data.get("status", "")))
    fields["decline"] = Decline.of(data.get("decline"))
    for key in ("missing_from_docs", "missing_from_excerpts"):
        fields[key] = tuple(name for name in data.get(key, ()) if isinstance(name, str))
    fields["conflicts"] = tuple(c for c in data.get("conflicts", ()) if isinstance(c, dict))
    if not data.get("stop_reason") and any("stopped" in t for t in data.get("trace", ()) if isinstance(t, dict)):
        fields["stop_reason"] = next(t["stopped"] for t in data["trace"] if isinstance(t, dict) and "stopped" in t)
    return Answer(**fields)


def event_to_dict(event: Event) -> dict:
    """One event as a JSON-ready dict tagged with its type name."""
    if isinstance(event, AnswerFinished):
        return {"type": "AnswerFinished", "answer": answer_to_dict(event.answer)}
    data = {"type": type(event).__name__, **dataclasses.asdict(event)}
    if isinstance(event, SearchFinished):
        data["hits"] = [hit_to_dict(hit) for hit in event.hits]
    return data


def event_from_dict(data: dict) -> Event | None:
    """The event `event_to_dict` wrote; None for a type this version does not know."""
    cls = _BY_NAME.get(data.get("type", ""))
    if cls is None:
        return None
    fields = _known(cls, data)
    if cls is AnswerFinished:
        return AnswerFinished(answer_from_dict(fields["answer"]))
    if cls is SearchStarted:
        fields["doc_ids"] = tuple(fields.get("doc_ids", ()))
    if cls is SearchFinished:
        fields["hits"] = tuple(hit_from_dict(h) for h in fields.get("hits", ()))
        fields["packed"] = tuple(fields.get("packed", ()))
        fields["omissions"] = tuple(o for o in map(omission_from, fields.get("omissions", ())) if o is not None)
        fields["excerpts"] = tuple(tuple(e) for e in fields.get("excerpts", ()))
    if cls is ContextBuilt:
        fields["omissions"] = tuple(fields.get("omissions", ()))
    if cls is ToolStep:
        fields["parse_errors"] = tuple(fields.get("parse_errors", ()))
    return cls(**fields)
