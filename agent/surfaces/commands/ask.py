"""`smoldocs ask`: one question, the answer streamed, then every citation with its verdict."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from agent import json_output
from agent.chats.codec import answer_to_dict
from agent.events import Answer, AnswerFinished, AnswerStatus, ErrorEvent, SearchFinished, TextDelta
from agent.settings import POLICIES, Settings
from rag.indexing.fill import coverage_note
from rag.printable import visible
from rag.verification.verdicts import Verdict

HELP = "ask one question about the docs and check the answer's citations"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from agent.surfaces.commands.common import (
        add_current_only_option,
        add_decoding_options,
        add_embed_budget_option,
        add_index_options,
    )

    p.add_argument("question", help="the question, in quotes")
    add_index_options(p)
    add_current_only_option(p)
    add_embed_budget_option(p)
    p.add_argument("--tools", choices=POLICIES, default=None, help="who decides the searches (default: auto)")
    add_decoding_options(p)
    from agent.surfaces.commands.docs_sources import add_collection_option

    add_collection_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


@dataclass(frozen=True)
class Options:
    question: str
    json: bool = False


def run(settings: Settings, options: Options) -> int:
    from agent.surfaces.commands.sessions import open_cli_session
    from agent.errors import UsageError

    if not options.question.strip():  # as `search ""` does, before a model or an index is loaded
        raise UsageError('the question is empty: ask something about the docs, e.g. smoldocs ask "how do I rotate the logs?"')

    session = open_cli_session(settings, question=options.question)
    answer: Answer | None = None
    streaming = not options.json and sys.stdout.isatty()
    for event in session.ask(options.question):
        if isinstance(event, TextDelta) and streaming:
            sys.stdout.write(visible(event.text))
            sys.stdout.flush()
        elif isinstance(event, SearchFinished) and not options.json:
            note = event.error or f"{len(event.hits)} hits, {len(event.packed)} excerpts, {event.dropped} dropped"
            read = f" as {event.searched[:60]!r}" if event.searched else ""  # a misspelt word read as another
            print(visible(f"search_docs({event.query[:60]!r}){read}: {note}"), file=sys.stderr)
        elif isinstance(event, ErrorEvent):
            print(f"smoldocs: {visible(event.message)}", file=sys.stderr)
        elif isinstance(event, AnswerFinished):
            answer = event.answer
    assert answer is not None, "the agent ended a turn without an answer"
    if options.json:
        data = answer_to_dict(answer)
        extra = {"answer": answer.text, "notice": session.search_notice or None, "dense_coverage": round(session.dense_coverage, 4)}
        print(json_output.dumps(data | extra))
    else:
        print_answer(answer, session, already_streamed=streaming)
        if not session.search_notice and coverage_note(session.dense_coverage):
            print(f"note: {coverage_note(session.dense_coverage)} (the next run continues)", file=sys.stderr)
    return 0 if answer.status not in (AnswerStatus.ERROR, AnswerStatus.INTERRUPTED) else 1


def print_answer(answer: Answer, session, already_streamed: bool) -> None:
    out = _Visible(sys.stdout)
    if already_streamed:
        out.write("\n")
        if answer.text.strip() != answer.model_text.strip():
            # What streamed was the model's draft; the answer is only what the verifier supports.
            out.write("\nChecked against the docs, the answer is:\n\n" + answer.text.strip() + "\n")
    else:
        out.write(answer.text + "\n")
    for conflict in answer.conflicts:
        out.write(f"\nNote: {conflict['note']}\n")
    if answer.draft.strip():
        held = sum(c.verdict is not Verdict.SUPPORTED for c in answer.claims) or "some"
        out.write(f"\n({held} unverified sentence(s) of the model's draft held back; --json shows them)\n")
    if answer.citations:
        out.write("\nCitations:\n")
        for c in answer.citations:
            note = c.verdict.note
            where = ""
            if c.chunk_id:
                chunk = session.chunk(c.chunk_id)
                where = f"{c.uri} {chunk.where}" if chunk else c.chunk_id
                if chunk and chunk.heading:
                    where += f" ({chunk.heading})"
                name = session.retriever.collection(chunk.doc_id) if chunk else ""
                if name and c.chunk_id.startswith(name + ":"):  # several collections: the uri alone is ambiguous
                    where += f" · {name}"
            score = f" score {c.support:.2f}" if c.support is not None else ""
            out.write(f"  [{c.n}] {note}{score}  {where}\n".rstrip() + "\n")
    elif answer.status is AnswerStatus.ANSWERED:
        out.write("\nNo citations: nothing in this answer is tied to the docs.\n")
    uncited = [c for c in answer.claims if c.verdict is Verdict.UNCITED]
    if uncited:
        out.write(f"Uncited claims: {len(uncited)}\n")
    tail = (
        f"\n{answer.status} · prompt {answer.prompt_tokens}/{answer.n_ctx} tokens · "
        f"{answer.completion_tokens} tokens at {answer.tokens_per_second:.0f} tok/s"
    )
    out.write(tail + "\n")


class _Visible:
    """A stream whose every write is escaped for the terminal (rag.printable.visible): answers quote documents."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        self.stream.write(visible(text))
