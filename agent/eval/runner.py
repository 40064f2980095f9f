"""The question set, and each question run: through a ChatSession (one fresh chat each), or searched and packed
as a search-first turn without the model (the probe); a Record per question either way."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from agent.errors import UsageError
from agent.input_files import MAX_QUESTIONS_BYTES, read_text
from agent.eval.records import CitedChunk, Record, ToolRound, split_answer
from agent.events import Answer, AnswerFinished, AnswerStatus, ErrorEvent, Event, SearchFinished
from agent.events import ToolStep as ToolStepEvent
from agent.settings import AgentSettings
from agent.turn.context import ContextWindow
from agent.turn.prompts import system_rules
from rag import markers
from rag.evaluation import MemoEmbedder, Question, evaluate, gold_chunk_ids, holds_evidence, question_files
from rag.excerpts.conflicts import find_conflicts
from rag.excerpts.packing import Ledger, block
from rag.excerpts.search_tool import SEARCH_DOCS_NAME, search_first

# Registry errors that mean the call's arguments never reached the tool (agent.turn.tools.ToolRegistry.call).
STEP_TEXT_CHARS = 300  # enough of a tool step to see what the model tried
_ARGUMENT_ERRORS = ("invalid arguments for", "unknown tool", "arguments are not valid JSON")


def load_question_file(path: str | Path) -> list[Question]:
    """Questions from a JSONL file; a bad line is a one-line error naming the file and line."""
    path = Path(path)
    try:
        lines = read_text(str(path), "the questions", MAX_QUESTIONS_BYTES, "split it into smaller files").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read questions file {path}: {exc.strerror or exc}") from None
    out = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or not row.get("q"):
                raise ValueError('expected an object with "id", "q", "doc" and "evidence"')
            out.append(Question.from_json(row))
        except (ValueError, KeyError) as exc:
            detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise UsageError(f"{path}:{lineno}: not a question ({detail}); see docs_corpus/questions.jsonl") from None
    if not out:
        raise UsageError(f"{path} holds no questions")
    return out


def default_question_file(docs_dir: Path | None) -> Path:
    """questions.jsonl of the docs folder; a folder without one needs --questions."""
    files = question_files(docs_dir)
    if len(files) != 1:
        where = docs_dir or "the bundled docs"
        raise UsageError(f"no questions.jsonl in {where}: pass --questions FILE (JSONL with id, q, doc, evidence)")
    return files[0]


def stratified(questions: Sequence[Question], limit: int | None) -> list[Question]:
    """A deterministic sample of `limit` questions, spread evenly over the file, unanswerable ones included.

    Unanswerable questions get their share of the sample, but at least 2 (when there are and limit >= 4);
    each group is then sampled at evenly spaced positions, and the result keeps the file's order.
    """
    if limit is None or limit >= len(questions):
        return list(questions)
    if limit <= 0:
        return []
    unanswerable = [q for q in questions if not q.answerable]
    answerable = [q for q in questions if q.answerable]
    share = round(limit * len(unanswerable) / len(questions))
    n_un = min(len(unanswerable), limit // 2, max(2, share))
    picked = {q.id for q in _spread(unanswerable, n_un)} | {q.id for q in _spread(answerable, limit - n_un)}
    return [q for q in questions if q.id in picked]


def _spread(items: Sequence[Question], n: int) -> list[Question]:
    if n <= 0 or not items:
        return []
    n = min(n, len(items))
    return [items[i * len(items) // n] for i in range(n)]


def retrieval_rows(index, questions: Sequence[Question], modes: Sequence[str]) -> list:
    """rag.evaluation.evaluate's Recall@1/@5 and MRR@10 per mode, each question embedded once in one batch."""
    if not index.has_dense:  # no MiniLM: only BM25 can be measured
        return evaluate(index, questions, [m for m in modes if m == "bm25"] or ["bm25"])
    memo = MemoEmbedder(index.embedder)
    memo.embed([q.q for q in questions if q.answerable])  # one call: per-call overhead dominates on a busy CPU
    probe = copy.copy(index)  # the same chunks and matrices; only the copy's embedder remembers
    probe.embedder = memo
    return evaluate(probe, questions, modes)


def run_questions(
    session, questions: Sequence[Question], progress: Callable[[int, int, Record], None] | None = None
) -> Iterator[Record]:
    """Ask each question in a new chat; a crash becomes a record with `error` set, and the run goes on."""
    for done, question in enumerate(questions, start=1):
        record = run_question(session, question)
        if progress is not None:
            progress(done, len(questions), record)
        yield record


def run_question(session, question: Question) -> Record:
    """One question through the session, re-checked against the index the session searches."""
    session.new_chat()
    started = time.perf_counter()
    answer: Answer | None = None
    error: str | None = None
    events: list[Event] = []
    try:
        for event in session.ask(question.q):
            events.append(event)
            if isinstance(event, AnswerFinished):
                answer = event.answer
            elif isinstance(event, ErrorEvent) and event.fatal:
                error = event.message
    except Exception as exc:  # the eval reports a crash as a failed question instead of stopping the run
        error = f"{type(exc).__name__}: {exc}"
    latency = time.perf_counter() - started
    if answer is None:
        answer = Answer(question=question.q, text="", status=AnswerStatus.ERROR)
        error = error or "the turn ended without an answer"
    return to_record(question, answer, events, session.retriever, latency, error, policy=session.policy)


def to_record(
    question: Question, answer: Answer, events: Sequence[Event], index, latency: float, error: str | None, policy: str = ""
) -> Record:
    """The eval's view of an answer: every citation looked up in the index and graded against the gold."""
    gold = tuple(gold_chunk_ids(question, index.chunks)) if question.answerable else ()
    searches = [e for e in events if isinstance(e, SearchFinished)]
    packed = {n for e in searches for n in e.packed}
    retrieved = tuple(dict.fromkeys(h.chunk_id for e in searches for h in e.hits))
    shown = tuple(dict.fromkeys(chunk_id for e in searches for _n, chunk_id in e.excerpts))
    outdated = {h.chunk_id for e in searches for h in e.hits if h.outdated}
    citations = []
    for c in answer.citations:
        chunk = index.chunk(c.chunk_id) if c.chunk_id else None
        is_gold = question.answerable and chunk is not None and (
            c.chunk_id in gold or holds_evidence(chunk.text, question.evidence)
        )
        citations.append(
            CitedChunk(
                c.n, c.verdict, c.chunk_id, c.doc_id, in_index=chunk is not None, shown=c.n in packed, gold=is_gold,
                outdated=chunk is not None and _outdated(index, chunk.doc_id),
            )
        )
    steps, agent_searches = tool_steps(events)
    shown_sentences, draft_sentences = split_answer(answer)
    return Record.of(
        question,
        gold,
        status=answer.status,
        answer=answer.text,
        model_text=answer.model_text,
        quoted=answer.quoted,
        markers=shown_markers(answer),
        citations=tuple(citations),
        packed=tuple(sorted(packed)),
        retrieved=retrieved,
        queries=tuple(_query(e.arguments) for e in searches),
        policy=policy,
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
        n_ctx=answer.n_ctx,
        latency=latency,
        time_to_first_token=answer.time_to_first_token,
        tokens_per_second=answer.tokens_per_second,
        tool_steps=tuple(steps),
        agent_searches=agent_searches,
        shown_chunks=shown,
        shown_outdated=tuple(c for c in shown if c in outdated),
        tags=question.tags,
        conflicts=tuple(answer.conflicts),
        error=error,
        shown_sentences=shown_sentences,
        draft_sentences=draft_sentences,
    )


def _outdated(index, doc_id: str) -> bool:
    return index.source(doc_id).outdated


def _query(arguments) -> str:
    return str(arguments.get("query", "")) if isinstance(arguments, dict) else repr(arguments)


def shown_markers(answer: Answer) -> tuple[int, ...]:
    """Every [n] the answer shows. The model's words and what the agent appended (quotes, a note) are also
    parsed apart, so that an unclosed code fence or backtick in the model's words cannot hide a citation."""
    parts = [answer.text]
    if answer.model_text and answer.text != answer.model_text and answer.text.startswith(answer.model_text):
        # The whole text too: a backtick left open by the model pairs differently across the join.
        parts += [answer.model_text, answer.text[len(answer.model_text):]]
    return tuple(dict.fromkeys(n for part in parts for n in markers.numbers(part)))


def tool_steps(events: Sequence[Event]) -> tuple[list[ToolRound], int]:
    """The model's tool rounds (each with its calls' validity), and the searches the agent ran by itself:
    search-first's one search, or the model policy's search of the question after no usable call."""
    steps: list[dict] = []
    agent_searches = 0
    for event in events:
        if isinstance(event, ToolStepEvent):
            steps.append({
                "calls": event.calls, "valid": 0, "parse_errors": len(event.parse_errors),
                "text": event.text[:STEP_TEXT_CHARS],
            })
        elif isinstance(event, SearchFinished):
            if not event.by_model:
                agent_searches += 1
            elif event.ok or not str(event.error or "").startswith(_ARGUMENT_ERRORS):
                steps[-1]["valid"] += 1
    return [ToolRound(**s) for s in steps], agent_searches


def probe_questions(index, tokenizer, questions: Sequence[Question], settings: AgentSettings) -> Iterator[Record]:
    """One record per question: what was retrieved and shown, and the conflict notes; no answer."""
    window = ContextWindow(tokenizer, settings.budgets, system_rules(settings.few_shot))
    for question in questions:
        yield probe_question(index, tokenizer, window, question, settings)


def probe_question(index, tokenizer, window: ContextWindow, question: Question, settings: AgentSettings) -> Record:
    prepared = window.prepare(question.q, [])
    ledger = Ledger()
    result = search_first(index, ledger, tokenizer, question.q, settings.k, prepared.evidence_budget)
    used = result.packed.used if result.packed else ()
    numbered = {ledger.peek(h): h for h in used}
    _messages, _built, shown = window.build(prepared, [(n, block(n, h)) for n, h in sorted(numbered.items())])
    shown_hits = [(n, numbered[n]) for n in shown if n in numbered]
    gold = tuple(gold_chunk_ids(question, index.chunks)) if question.answerable else ()
    return Record.of(
        question,
        gold,
        status=AnswerStatus.NOT_ASKED,
        packed=tuple(sorted(numbered)),
        retrieved=tuple(h.chunk_id for h in result.hits),
        queries=(question.q,),
        shown_chunks=tuple(h.chunk_id for _, h in shown_hits),
        shown_outdated=tuple(h.chunk_id for _, h in shown_hits if h.outdated),
        policy=f"{SEARCH_DOCS_NAME} only (no model)",
        tags=question.tags,
        conflicts=tuple(c.to_json() for c in find_conflicts(shown_hits)),
    )
