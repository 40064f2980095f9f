"""A chat session: the model, the index and the history of one conversation. The CLI and the TUI drive it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence, runtime_checkable


from agent.events import Answer, AnswerFinished, AnswerStatus, Event
from agent.opening import Loaders, Models, open_docs, open_models, session_docs_dir
from agent.settings import AgentSettings, Settings
from agent.turn.loop import Agent
from agent.turn.quoting import QuoteCandidates
from models.protocols import CancelToken, ChatModel, Embedder
from models.reranker import optional_reranker
from rag.answering.extractive import QuoteFallback
from rag.answering.passages import PassageReranker
from rag.types import Chunk, Hit, Retriever
from rag.verification.verdicts import Verdict
from rag.verification.verifier import Verifier

if TYPE_CHECKING:
    from rag.indexing.collections import Collections
    from rag.ingest.man_pages import ManSource


@dataclass
class Turn:
    question: str
    answer: Answer


@runtime_checkable
class Session(Protocol):
    """What the TUI drives: one conversation over one index. ChatSession is the real one."""

    model_name: str
    index_size: int
    docs_dir: Path | str | None  # a PostgreSQL store: its URL, password hidden
    dense_coverage: float  # the share of chunks search ranks by meaning too
    backend_note: str  # what the status line says of the model's backend ("" in-process)
    search_notice: str  # what search is missing, in one line ("" when whole)

    def ask(self, question: str, cancel: CancelToken | None = None) -> Iterator[Event]: ...

    def search(self, query: str, k: int = 5) -> list[Hit]: ...

    def chunk(self, chunk_id: str) -> Chunk | None: ...

    def new_chat(self) -> None: ...

    def restore(self, turns: Sequence[Turn]) -> None: ...

    def close(self) -> None: ...


class ChatSession:
    """Holds one conversation. `ask` yields the events of a turn and records it when the answer is final."""

    def __init__(
        self,
        model: ChatModel,
        retriever: Retriever,
        *,
        embedder: Embedder | None = None,
        settings: AgentSettings | None = None,
        docs_dir: Path | str | None = None,
    ) -> None:
        self.model = model
        self.retriever = retriever
        self.embedder = embedder
        self.settings = fit_to_model(settings or AgentSettings(), model)
        self.docs_dir = docs_dir
        self.history: list[Turn] = []
        # The claim verifier, the extractive fallback and quote decoding's candidates, bound to the embedder (None:
        # lexical only); the fallback and the candidates ask rag.answering.answerability, with the index's term counts when
        # the retriever has them.
        # Both are given the turn's snapshot's term counts and standout (how far its closest chunk stands out) when
        # a turn starts (_pin).
        vocabulary = retriever.vocabulary
        reranker = optional_reranker(embedder) if self.settings.rerank else None
        self._quoter = QuoteFallback(embedder, vocabulary, reranker, retriever.standout)
        self._candidates = QuoteCandidates(embedder, vocabulary, standout=retriever.standout)
        self.agent = Agent(
            model, retriever, self.settings, judge=Verifier(embedder), quoter=self._quoter, candidates=self._candidates,
            reorder=PassageReranker(reranker) if reranker is not None else None,
        )

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def n_ctx(self) -> int:
        return self.agent.window.budgets.n_ctx

    @property
    def search_notice(self) -> str:
        """What search is missing, in one line ("" when it is whole): shown in the TUI header and --json."""
        return self.retriever.notice

    @property
    def index_size(self) -> int:
        return len(self.retriever)

    @property
    def policy(self) -> str:
        return self.agent.policy

    @property
    def backend_note(self) -> str:
        """What the TUI says about the model's backend: the tool policy in force, and what a server cannot do."""
        if self.model.supports_guard:
            return ""  # in-process: the status line stays as it was
        return f"tools: {self.policy} · n_ctx {self.n_ctx:,} · copy/marker guards: in-process only"

    @property
    def dense_coverage(self) -> float:
        """The share of chunks with an embedding: search is hybrid for those, BM25 for the rest."""
        return self.retriever.dense_coverage

    def _pin(self, snapshot) -> None:
        """Search, quote and judge answerability against one snapshot: term counts kept from start-up once let a
        deleted file's words pass for known and a new file's for unknown after a live re-index."""
        self.agent.retriever = snapshot
        self._quoter.vocabulary = self._candidates.vocabulary = snapshot.vocabulary
        self._quoter.standout = self._candidates.standout = snapshot.standout

    def ask(self, question: str, cancel: CancelToken | None = None) -> Iterator[Event]:
        """Run one turn; a cancelled turn is kept with what streamed so far, marked cancelled.

        A live index (rag.indexing.live) is pinned for the turn: every search and check of one answer reads the same
        snapshot, and its background chunking and embedding pause so the answer gets the cores.
        """
        # Only verified text goes back to the model: a turn whose words all stayed in the draft adds nothing.
        history = [
            (t.question, t.answer.text) for t in self.history
            if t.answer.status not in (AnswerStatus.ERROR, AnswerStatus.INTERRUPTED) and t.answer.text.strip()
        ]
        self._pin(self.retriever.snapshot())
        release = self.retriever.hold()
        try:
            for event in self.agent.run(question, history, cancel, sources=self.last_sources()):
                if isinstance(event, AnswerFinished) and (event.answer.text.strip() or event.answer.draft.strip()):
                    self.history.append(Turn(question, event.answer))
                yield event
        finally:
            release()

    def close(self) -> None:
        """Stop a live index's worker and watcher, saving the embeddings computed so far."""
        self.retriever.close()

    def last_sources(self) -> dict[int, str]:
        """The last answer's citation numbers and the chunks they name (made-up and unresolved ones left out)."""
        if not self.history:
            return {}
        return {
            c.n: c.chunk_id
            for c in self.history[-1].answer.citations
            if c.chunk_id and c.verdict not in (Verdict.MADE_UP, Verdict.UNRESOLVED)
        }

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """Hits for `query` without asking the model (the TUI's /search)."""
        return list(self.retriever.search(query, k=k))

    def chunk(self, chunk_id: str) -> Chunk | None:
        return self.retriever.chunk(chunk_id)

    def new_chat(self) -> None:
        self.history = []

    def restore(self, turns: Sequence[Turn]) -> None:
        self.history = list(turns)


def fit_to_model(settings: AgentSettings, model: ChatModel) -> AgentSettings:
    """The default budgets scaled to the model's window (a server may hold more, or less, than 2048 tokens), and
    `auto` decoding resolved by the model's size."""
    from agent.turn.context import Budgets

    if settings.budgets == Budgets() and model.n_ctx != settings.budgets.n_ctx:
        settings = settings.with_(budgets=Budgets.for_window(model.n_ctx))
    if settings.decoding == "auto":
        settings = settings.with_(decoding=settings.resolve_decoding(model.n_params))
    return settings


def start_session(
    settings: Settings,
    models: Models,
    *,
    live: bool = False,
    progress: Callable | None = None,
    embed_first: str | None = None,
    agent: AgentSettings | None = None,
) -> ChatSession:
    """A chat session over the docs of `settings` (agent.opening.open_docs), answering with `models.chat`, its turns
    run by `agent` (default: `settings.agent`). `live`: see open_docs; call `close()` when done."""
    model = models.chat  # first: its tokenizer then measures the chunks
    index = open_docs(settings, models, live=live, progress=progress, embed_first=embed_first)
    # --collection: every search of the session stays inside them (rag.indexing.collections.Within)
    from rag.indexing.collections import Within

    retriever = Within(index, settings.collections) if settings.collections else index
    return ChatSession(model, retriever, embedder=models.embedder, settings=agent or settings.agent,
                       docs_dir=session_docs_dir(settings, index))


def open_session(
    docs_dir: str | Path | ManSource | Collections | None = None,
    model_path: str | Path | None = None,
    tools: str = "auto",
    index_dir: str | Path | None = None,
    progress: Callable | None = None,
    settings: AgentSettings | None = None,
    current_only: bool = False,
    open_model: Callable[[], ChatModel] | None = None,
    live: bool = False,
    store: str | None = None,
    open_embedder: Callable | None = None,
    collection: str = "",
    only: Sequence[str] = (),
) -> ChatSession:
    """start_session from keywords, for scripts and benchmarks: the GGUF at `model_path` (or `open_model()`), the
    embedder (`open_embedder()`, default MiniLM in-process) and the index of `docs_dir` (or the `store`).
    `docs_dir` may be several named sources (rag.indexing.collections.Collections); `collection` names a single
    one; `only`: the collections every search stays in (--collection)."""
    from rag.indexing.collections import Collection, Collections

    sources: Collections | None = None
    if isinstance(docs_dir, Collections):
        sources, docs_dir = docs_dir, None
    elif collection:
        folder = Path(docs_dir) if isinstance(docs_dir, str) else docs_dir
        if folder is None:
            from rag.ingest.corpus import default_docs_dir

            folder = default_docs_dir()
        sources = Collections((Collection(collection, folder, Path(index_dir) if index_dir else None),))
    run = Settings(
        docs=Path(docs_dir) if isinstance(docs_dir, str) else docs_dir, index=Path(index_dir) if index_dir else None,
        sources=sources, collections=tuple(only),
        store=store, current_only=current_only, model=Path(model_path) if model_path else None,
        agent=(settings or AgentSettings()).with_(policy=tools),
    )
    defaults = Loaders()
    loaders = Loaders(
        chat=(lambda s: open_model()) if open_model is not None else defaults.chat,
        embedder=(lambda s: open_embedder()) if open_embedder is not None else defaults.embedder,
    )
    return start_session(run, open_models(run, loaders), live=live, progress=progress)
