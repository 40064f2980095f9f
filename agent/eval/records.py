"""What the eval keeps of one question's run: the answer, each citation as the eval re-checked it, the shown
sentences, costs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from agent.events import Answer
from rag import markers
from rag.verification.verdicts import Verdict

FLAGGED = (Verdict.MADE_UP, Verdict.UNRESOLVED)  # verdicts that tell the reader a citation is bad


@dataclass(frozen=True)
class ShownSentence:
    text: str
    verdict: Verdict  # the verifier's verdict of the sentence
    by_model: bool  # the model decoded it (copied or written); False for smoldocs' own quotes
    evidence: str | None = None  # the cited chunk's sentence it was judged against


@dataclass(frozen=True)
class CitedChunk:
    """One `[n]` of an answer: the checker's verdict and what the eval found on its own."""

    n: int
    verdict: Verdict
    chunk_id: str | None = None
    doc_id: str | None = None
    in_index: bool = False  # the chunk id is in the index
    shown: bool = False  # a search packed excerpt n, so the model could have seen it
    gold: bool = False  # a gold chunk, or a chunk whose text holds the evidence string
    outdated: bool = False  # its document is archived, deprecated or superseded

    @property
    def flagged(self) -> bool:
        return self.verdict in FLAGGED

    @property
    def resolved(self) -> bool:
        """Points at a shown excerpt of a stored chunk, and the checker did not flag it."""
        return not self.flagged and self.in_index and self.shown

    @property
    def falsely_passed(self) -> bool:
        """The checker let it through, yet the eval cannot resolve it: a made-up number shown as fine."""
        return not self.flagged and not (self.in_index and self.shown)


@dataclass(frozen=True)
class ToolRound:
    """One tool round of the `model` policy: the calls it parsed and how many had valid arguments."""

    calls: int
    valid: int
    parse_errors: int = 0
    text: str = ""  # what the model wrote, cut short

    @property
    def succeeded(self) -> bool:
        return self.valid >= 1


@dataclass(frozen=True)
class Record:
    """One question, run once. `error` is set when the turn crashed or generation failed."""

    id: str
    question: str
    doc: str | None
    evidence: str | None = None
    gold_docs: tuple[str, ...] = ()
    gold_chunks: tuple[str, ...] = ()
    status: str = "answered"  # answered | insufficient_evidence | cancelled | error
    answer: str = ""
    model_text: str = ""
    quoted: bool = False
    markers: tuple[int, ...] = ()  # every [n] in the answer text, parsed by the eval
    citations: tuple[CitedChunk, ...] = ()
    packed: tuple[int, ...] = ()  # excerpt numbers the searches packed
    retrieved: tuple[str, ...] = ()  # chunk ids the agent's searches returned
    queries: tuple[str, ...] = ()  # what was searched, in order
    shown_chunks: tuple[str, ...] = ()  # chunk ids of the excerpts the searches packed
    policy: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    n_ctx: int = 0
    latency: float = 0.0  # wall time of the whole turn
    time_to_first_token: float = 0.0
    tokens_per_second: float = 0.0
    tool_steps: tuple[ToolRound, ...] = ()  # model policy only
    agent_searches: int = 0  # searches the agent ran itself (search-first): not the model's calls
    tags: tuple[str, ...] = ()  # what the question exercises: "conflict", "outdated"
    conflicts: tuple[dict, ...] = ()  # rag.excerpts.conflicts annotations among the shown excerpts
    shown_outdated: tuple[str, ...] = ()  # chunk ids of shown excerpts whose document is outdated
    error: str | None = None
    shown_sentences: tuple[ShownSentence, ...] = ()  # what the answer shows, judged
    draft_sentences: tuple[ShownSentence, ...] = ()  # what it keeps apart as an unverified draft

    @property
    def answerable(self) -> bool:
        return self.doc is not None

    @property
    def abstained(self) -> bool:
        return self.status == "insufficient_evidence"

    @property
    def crashed(self) -> bool:
        return self.error is not None or self.status == "error"

    @classmethod
    def of(cls, question, gold_chunks: tuple[str, ...], **fields) -> "Record":
        """A record of `question` (a rag.evaluation.Question): its own fields, then what the run found."""
        return cls(
            id=question.id, question=question.q, doc=question.doc, evidence=question.evidence,
            gold_docs=question.gold_docs, gold_chunks=gold_chunks, **fields,
        )

    def cited(self, n: int) -> CitedChunk | None:
        return next((c for c in self.citations if c.n == n), None)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, row: dict) -> "Record":
        """A record from its to_json form (a row of report.json; extra keys are ignored)."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in row.items() if k in names}
        values["citations"] = tuple(CitedChunk(**{**c, "verdict": Verdict.of(c["verdict"])}) for c in row.get("citations", ()))
        values["tool_steps"] = tuple(ToolRound(**s) for s in row.get("tool_steps", ()))
        for name in ("shown_sentences", "draft_sentences"):
            values[name] = tuple(ShownSentence(**{**s, "verdict": Verdict.of(s["verdict"])}) for s in row.get(name, ()))
        listed = ("gold_docs", "gold_chunks", "markers", "packed", "retrieved", "queries", "shown_chunks", "tags",
                  "conflicts", "shown_outdated")
        for name in listed:
            values[name] = tuple(row.get(name, ()))
        return cls(**values)


def split_answer(answer: Answer) -> tuple[tuple[ShownSentence, ...], tuple[ShownSentence, ...]]:
    """(shown, draft) of an agent Answer.

    `answer.claims` holds the verdicts of the shown text and of everything the model wrote (the draft included),
    so a claim is shown when its text is in `answer.text`, and draft when it is only in `answer.draft`; a
    sentence judged twice (the model wrote it and it is shown) counts once, with the shown text's verdict. The
    model decoded a shown sentence unless the text is smoldocs' own quotes (`quoted`).
    """
    shown_text, draft_text = _squash(markers.strip(answer.text)), _squash(markers.strip(answer.draft))
    # smoldocs' own quotes: the whole text of a quoted answer, or what follows the model's words in one that
    # keeps them in front.
    model = answer.model_text or ""
    quotes = answer.text[len(model):] if model and answer.text.startswith(model) else answer.text
    quotes = _squash(markers.strip(quotes)) if answer.quoted else ""
    shown: dict[str, ShownSentence] = {}
    draft: dict[str, ShownSentence] = {}
    for c in reversed(answer.claims):  # the shown text's verdicts come last: they win
        key = _squash(c.text)
        if not key:
            continue
        if key in shown_text:
            shown.setdefault(key, ShownSentence(c.text, c.verdict, by_model=key not in quotes, evidence=c.evidence))
        elif key in draft_text:
            draft.setdefault(key, ShownSentence(c.text, c.verdict, by_model=True, evidence=c.evidence))
    return tuple(reversed(shown.values())), tuple(reversed(draft.values()))


def _squash(text: str) -> str:
    return "".join(text.split())
