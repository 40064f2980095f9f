"""A chat session: the model, the index and the history of one conversation. The CLI and the TUI drive it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from agent.events import Answer, AnswerFinished, Event
from agent.loop import Agent
from agent.settings import AgentSettings
from models.protocols import CancelToken, ChatModel, Embedder
from rag.types import Chunk, Hit, Retriever


@dataclass
class Turn:
    question: str
    answer: Answer


class ChatSession:
    """Holds one conversation. `ask` yields the events of a turn and records it when the answer is final."""

    def __init__(
        self,
        model: ChatModel,
        retriever: Retriever,
        *,
        tokenizer=None,
        embedder: Embedder | None = None,
        settings: AgentSettings | None = None,
        docs_dir: Path | None = None,
    ) -> None:
        self.model = model
        self.retriever = retriever
        self.tokenizer = tokenizer or model.tokenizer
        self.embedder = embedder
        self.settings = settings or AgentSettings()
        self.docs_dir = docs_dir
        self.history: list[Turn] = []
        judge, fallback = _verifiers(embedder)
        self.agent = Agent(model, retriever, self.settings, judge=judge, fallback=fallback, tool_json_grammar=_json_grammar())

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def n_ctx(self) -> int:
        return self.agent.window.budgets.n_ctx

    @property
    def index_size(self) -> int:
        try:
            return len(self.retriever)  # type: ignore[arg-type]
        except TypeError:
            return 0

    @property
    def policy(self) -> str:
        return self.agent.policy

    def ask(self, question: str, cancel: CancelToken | None = None) -> Iterator[Event]:
        """Run one turn; a cancelled turn is kept with what streamed so far, marked cancelled."""
        history = [(t.question, t.answer.text) for t in self.history if t.answer.status != "error"]
        for event in self.agent.run(question, history, cancel):
            if isinstance(event, AnswerFinished) and event.answer.text.strip():
                self.history.append(Turn(question, event.answer))
            yield event

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """Hits for `query` without asking the model (the TUI's /search)."""
        return list(self.retriever.search(query, k=k))

    def chunk(self, chunk_id: str) -> Chunk | None:
        return self.retriever.chunk(chunk_id)

    def new_chat(self) -> None:
        self.history = []

    def restore(self, turns: Sequence[Turn]) -> None:
        self.history = list(turns)


def _json_grammar():
    try:
        from models.grammar import json_schema_grammar
    except ImportError:  # pragma: no cover - llama_cpp is a hard dependency
        return None
    return json_schema_grammar


def _verifiers(embedder: Embedder | None):
    """The claim checker and the extractive fallback, bound to the embedder (None: lexical only)."""
    from agent.verifying import make_fallback, make_judge

    return make_judge(embedder), make_fallback(embedder)


def open_session(
    docs_dir: str | Path | None = None,
    model_path: str | Path | None = None,
    tools: str = "auto",
    index_dir: str | Path | None = None,
    progress: Callable | None = None,
    settings: AgentSettings | None = None,
) -> ChatSession:
    """Load the model, the embedder and the index of `docs_dir` (building it on first use)."""
    from models.chat import load_chat_model
    from models.embedder import load_embedder
    from rag.corpus import default_docs_dir
    from rag.index import open_index

    model = load_chat_model(model_path)
    embedder = load_embedder()
    docs = Path(docs_dir) if docs_dir else default_docs_dir()
    index = open_index(docs, model.tokenizer, embedder, index_dir=index_dir, progress=progress)
    settings = (settings or AgentSettings()).with_(policy=tools)
    return ChatSession(model, index, embedder=embedder, settings=settings, docs_dir=docs)
