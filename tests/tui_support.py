"""Sessions and corpora for the TUI tests: the real ChatSession over a scripted model, and a replay fake."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Iterator

from agent.events import (
    Answer,
    AnswerFinished,
    ContextBuilt,
    SearchFinished,
    SearchStarted,
    TextDelta,
    TurnStarted,
)
from agent.session import ChatSession
from agent.settings import AgentSettings
from fakes import HashEmbedder, ScriptedChatModel
from rag.excerpts.packing import Omission
from rag.types import Chunk, Hit
from rag.verification.verdicts import CitationVerdict, ClaimVerdict, Verdict
from test_agent_loop import MemoryRetriever


def pilot_test(test):
    """Run an async Pilot test with asyncio.run: no async plugin needed."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))

    return run


def lasting_notices(app):
    """`app` with notices that stay readable however slow the machine: App._notifications drops a notice once its
    timeout (5 s by default) has passed, and a test that reads it after two answers on a loaded machine saw none."""
    app.NOTIFICATION_TIMEOUT = 600
    return app


def chunk(doc: str, n: int, heading: tuple[str, ...], lines: tuple[int, int], text: str) -> Chunk:
    return Chunk(f"{doc}#{n}", doc, doc, text, heading, lines[0], lines[1])


CHUNKS = [
    chunk("docs/kv-cache.md", 0, ("KV cache",), (1, 6),
          "The kv cache stores keys and values of earlier tokens so they are not recomputed at each step."),
    chunk("docs/kv-cache.md", 1, ("KV cache", "Size"), (8, 14),
          "The kv cache of SmolLM2-135M at 2048 tokens takes about 90 MB in 16-bit floats."),
    chunk("docs/bm25.md", 0, ("BM25",), (1, 9),
          "BM25 ranks documents by term frequency and inverse document frequency."),
    chunk("docs/sampling.md", 0, ("Sampling", "Temperature"), (3, 11),
          "Temperature scales the logits before sampling the next token."),
]


def real_session(replies=(), delay: float = 0.0, **settings) -> tuple[ChatSession, ScriptedChatModel, MemoryRetriever]:
    """The real ChatSession (agent loop, packing, citation checks) over a scripted model and a memory retriever."""
    model = ScriptedChatModel(replies, delay=delay)
    retriever = MemoryRetriever(CHUNKS)
    session = ChatSession(
        model, retriever, embedder=HashEmbedder(),
        settings=AgentSettings(policy="search-first", fallback=False, **settings),
        docs_dir=Path("docs_corpus"),
    )
    return session, model, retriever


def hit(c: Chunk, score: float) -> Hit:
    return Hit(c, score)


def mixed_turn(question: str = "What does the kv cache store, and how big is it?") -> list:
    """One turn whose answer carries every verdict: fixed numbers, so snapshots do not move."""
    hits = (hit(CHUNKS[0], 0.91), hit(CHUNKS[1], 0.74), hit(CHUNKS[3], 0.33), hit(CHUNKS[2], 0.12))
    text = (
        "The kv cache stores keys and values of earlier tokens [1], so they are not recomputed. "
        "At 2048 tokens it takes about 90 MB [2]. It also speeds up BM25 [3] "
        "and it is 9000 GB on disk [7]."
    )
    answer = Answer(
        question=question,
        text=text,
        status="answered",
        citations=(
            CitationVerdict(1, CHUNKS[0].chunk_id, CHUNKS[0].doc_id, CHUNKS[0].uri, Verdict.SUPPORTED, 0.83,
                            "The kv cache stores keys and values of earlier tokens so they are not recomputed at each step."),
            CitationVerdict(2, CHUNKS[1].chunk_id, CHUNKS[1].doc_id, CHUNKS[1].uri, Verdict.WEAK, 0.41,
                            "The kv cache of SmolLM2-135M at 2048 tokens takes about 90 MB in 16-bit floats."),
            CitationVerdict(3, CHUNKS[3].chunk_id, CHUNKS[3].doc_id, CHUNKS[3].uri, Verdict.UNSUPPORTED, 0.05, None),
            CitationVerdict(7, None, None, None, Verdict.MADE_UP),
        ),
        claims=(
            ClaimVerdict("The kv cache stores keys and values of earlier tokens [1], so they are not recomputed.", (1,), Verdict.SUPPORTED, 0.83),
            ClaimVerdict("At 2048 tokens it takes about 90 MB [2].", (2,), Verdict.WEAK, 0.41),
            ClaimVerdict("It also speeds up BM25 [3]", (3,), Verdict.UNSUPPORTED, 0.05),
            ClaimVerdict("and it is 9000 GB on disk [7].", (7,), Verdict.MADE_UP),
        ),
        prompt_tokens=1211,
        completion_tokens=48,
        n_ctx=2048,
        tokens_per_second=31.5,
    )
    return [
        TurnStarted(question, 0, "search-first"),
        SearchStarted(question, 5, call_id=0),
        SearchFinished(
            question, hits, packed=(1, 2, 3), dropped=1,
            omissions=(Omission(4, CHUNKS[2].chunk_id, CHUNKS[2].uri, "over_budget"),), call_id=0,
        ),
        ContextBuilt(1211, 2048, 384, {"system": 212, "evidence": 771, "history": 96, "question": 118},
                     ("history: 1 older turn dropped",)),
        *(TextDelta(word) for word in text.split(" ")),
        AnswerFinished(answer),
    ]


SAVED_CHATS = (  # (question, answer), oldest first
    ("what does the kv cache store", "The kv cache stores keys and values [1]."),
    ("how are documents ranked", "BM25 ranks documents by term frequency [1]."),
    ("what does temperature do", "Temperature scales the logits before sampling [1]."),
)


def save_chats(store, chats=SAVED_CHATS) -> None:
    """One saved chat per (question, answer text), in that order, updated a second apart from a fixed time."""
    import os

    from agent.events import AnswerStatus

    for i, (question, text) in enumerate(chats):
        with store.create(docs_dir="docs_corpus", model="scripted") as log:
            log.record(TurnStarted(question, 0, "search-first"))
            log.record(AnswerFinished(Answer(question=question, text=text, status=AnswerStatus.ANSWERED)))
        os.utime(log.path, (1_000_000 + i, 1_000_000 + i))  # newest first, whatever the clock did


class ReplaySession:
    """The ChatSession API over fixed events, for deterministic snapshots."""

    def __init__(self, turns: list[list] | None = None) -> None:
        self.model_name = "SmolLM2-135M-Instruct"
        self.n_ctx = 2048
        self.index_size = len(CHUNKS)
        self.docs_dir = Path("docs_corpus")
        self.dense_coverage = 1.0
        self.backend_note = ""
        self.search_notice = ""
        self.history: list = []
        self.turns = list(turns or [])
        self.retriever = MemoryRetriever(CHUNKS)
        self.closed = False

    def ask(self, question: str, cancel=None) -> Iterator:
        events = self.turns.pop(0)
        for event in events:
            yield event

    def search(self, query: str, k: int = 5) -> list[Hit]:
        return self.retriever.search(query, k)

    def chunk(self, chunk_id: str) -> Chunk | None:
        return self.retriever.chunk(chunk_id)

    def new_chat(self) -> None:
        self.history = []

    def restore(self, turns) -> None:
        self.history = list(turns)

    def close(self) -> None:
        self.closed = True
