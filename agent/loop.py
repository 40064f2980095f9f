"""One agent turn as a generator of typed events: search, fit the context, stream the answer, check it."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Callable, Iterator, Sequence

from agent.checking import check_answer, merge_checks, shown_map
from agent.context import ContextWindow
from agent.events import (
    Answer,
    AnswerFinished,
    ContextBuilt,
    ErrorEvent,
    Event,
    SearchFinished,
    SearchStarted,
    TextDelta,
    TurnStarted,
)
from agent.grammars import MarkerGuard, citation_grammar, tool_call_grammar
from agent.repetition import RepetitionGuard
from agent.prompts import NOT_COVERED, UNSUPPORTED_NOTE, abstains, neutralize, placeholder_query, system_rules, tool_rules
from agent.settings import AgentSettings
from agent.toolcalls import ParseFailure, parse_tool_calls
from agent.tools import Tool, ToolRegistry, ToolResult
from models.errors import ModelError
from models.protocols import CancelToken, ChatModel
from rag.packing import Ledger, block
from rag.search_tool import SEARCH_DOCS_DESCRIPTION, SEARCH_DOCS_NAME, SEARCH_DOCS_SCHEMA, search_docs_tool
from rag.types import Retriever

_MARKER = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
MAX_QUERY_CHARS = 1000


def strip_markers(text: str) -> str:
    """History answers lose their [n]: numbers belong to the ledger of the run that wrote them."""
    return _MARKER.sub("", text)


class Agent:
    """Answers one question at a time over a retriever; `run` yields the events of one turn."""

    def __init__(
        self,
        model: ChatModel,
        retriever: Retriever,
        settings: AgentSettings = AgentSettings(),
        judge: Callable | None = None,
        fallback: Callable | None = None,
        tool_json_grammar: Callable[[dict], str] | None = None,
    ) -> None:
        self.model = model
        self.retriever = retriever
        self.settings = settings
        self.judge = judge  # (answer, shown, lookup) -> (verdicts by n, claims)
        self.fallback = fallback  # (question, shown, lookup) -> (quoted text, numbers) | None
        self.tool_json_grammar = tool_json_grammar
        self.window = ContextWindow(model.tokenizer, settings.budgets, system_rules(settings.few_shot))
        self.policy = settings.resolve_policy(getattr(model, "n_params", None))

    # -- the turn -------------------------------------------------------------------------------------------

    def run(
        self, question: str, history: Sequence[tuple[str, str]] = (), cancel: CancelToken | None = None
    ) -> Iterator[Event]:
        cancel = cancel or CancelToken()
        yield TurnStarted(question=question, turn=len(history), policy=self.policy)
        answer = Answer(question=question, text="", status="answered", n_ctx=self.window.budgets.n_ctx)
        if not question.strip():
            answer.status = "insufficient_evidence"
            answer.text = "Ask a question about the docs."
            yield AnswerFinished(answer)
            return
        history = [(q, strip_markers(a)) for q, a in history]
        prepared = self.window.prepare(question, history)
        ledger = Ledger()
        results: list[ToolResult] = []
        if self.policy == "search-first":
            query = follow_up_query(question, history)
            args = {"query": query.strip()[:MAX_QUERY_CHARS], "k": self.settings.k}
            results += yield from self._run_calls([(SEARCH_DOCS_NAME, args)], ledger, prepared.evidence_budget, answer)
        else:
            results += yield from self._model_steps(prepared.question, prepared.history, ledger, prepared.evidence_budget, answer, cancel)
        if cancel.cancelled:
            answer.status = "cancelled"
            yield AnswerFinished(answer)
            return
        yield from self._answer(prepared, ledger, results, answer, cancel)

    # -- tools ----------------------------------------------------------------------------------------------

    def _registry(self, ledger: Ledger, budget: int) -> ToolRegistry:
        tool = search_docs_tool(self.retriever, ledger, self.model.tokenizer, max_tokens=budget, order=self.settings.order)
        return ToolRegistry({SEARCH_DOCS_NAME: Tool(SEARCH_DOCS_NAME, SEARCH_DOCS_DESCRIPTION, SEARCH_DOCS_SCHEMA, tool)})

    def _run_calls(self, calls, ledger: Ledger, budget: int, answer: Answer) -> Iterator[Event]:
        """Run tool calls (in parallel threads when several), sharing the run's ledger; returns their results."""
        registry = self._registry(ledger, budget // max(1, len(calls)))
        base = len(answer.trace)
        for i, (_name, args) in enumerate(calls):
            a = args if isinstance(args, dict) else {}
            k = a.get("k", 5)
            doc_ids = a.get("doc_ids")
            yield SearchStarted(
                query=str(a.get("query", "")),
                k=k if isinstance(k, int) else 5,
                doc_ids=tuple(map(str, doc_ids)) if isinstance(doc_ids, list) else (),
                call_id=base + i,
            )
        if len(calls) == 1:
            results = [registry.call(*calls[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(calls)) as pool:
                results = list(pool.map(lambda c: registry.call(*c), calls))
        for i, result in enumerate(results):
            payload = result.payload
            packed = getattr(payload, "packed", None)
            hits = tuple(getattr(payload, "hits", ()) or ())
            excerpts = tuple((ledger.peek(h), h.chunk_id) for h in (packed.used if packed else ()))
            numbers = tuple(n for n, _ in excerpts)
            answer.trace.append(
                {
                    "tool": result.name,
                    "arguments": result.arguments,
                    "ok": result.ok,
                    "error": result.error,
                    "hits": [h.chunk_id for h in hits],
                    "packed": list(numbers),
                    "dropped": packed.dropped if packed else 0,
                }
            )
            yield SearchFinished(
                query=str(result.arguments.get("query", "")) if isinstance(result.arguments, dict) else "",
                hits=hits,
                packed=numbers,
                dropped=packed.dropped if packed else 0,
                omissions=tuple(packed.omissions) if packed else (),
                result=result.text,
                error=result.error,
                call_id=base + i,
                excerpts=excerpts,
            )
        return results

    def _model_steps(self, question, history, ledger, budget, answer: Answer, cancel) -> Iterator[Event]:
        """The model chooses its searches: up to max_steps - 1 tool rounds, errors fed back as results."""
        registry = self._registry(ledger, budget)
        messages = [{"role": "system", "content": tool_rules(registry.specs())}]
        for q, a in history:
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        messages.append({"role": "user", "content": neutralize(question)})
        options = self.settings.tool_generation
        if self.settings.tool_grammar and self.tool_json_grammar is not None:
            options = replace(options, grammar=tool_call_grammar(SEARCH_DOCS_NAME, self.tool_json_grammar(_grammar_schema())))
        results: list[ToolResult] = []
        for _ in range(max(1, self.settings.max_steps - 1)):
            if cancel.cancelled:
                break
            if self.model.tokenizer.count_chat(messages) + options.max_tokens > self.window.budgets.n_ctx:
                break  # no room for another tool round; answer with what we have
            text = "".join(self.model.stream(messages, options, cancel))
            calls, failures = parse_tool_calls(text, default_tool=SEARCH_DOCS_NAME)
            copied = [c for c in calls if isinstance(c.arguments, dict) and placeholder_query(c.arguments.get("query"))]
            calls = [c for c in calls if c not in copied]
            failures += [ParseFailure(text, "the query was copied from the example; write search words for the question") for _ in copied]
            answer.trace.append({"tool_step": text, "calls": len(calls), "parse_errors": [f.reason for f in failures]})
            if not calls and not failures:
                break  # the model answered without searching
            step: list[ToolResult] = []
            if calls:
                step = yield from self._run_calls([(c.name, c.arguments) for c in calls], ledger, budget, answer)
            results += step
            if any(r.ok for r in step):
                break
            feedback = "; ".join([r.text for r in step] + [f"Error: {f.reason}" for f in failures])
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": f"Tool result: {feedback}"}]
        if not any(r.ok for r in results) and not cancel.cancelled:
            # The model never produced a usable search: search the question itself rather than answer blind.
            answer.trace.append({"fallback_search": True})
            args = {"query": question.strip()[:MAX_QUERY_CHARS], "k": self.settings.k}
            results += yield from self._run_calls([(SEARCH_DOCS_NAME, args)], ledger, budget, answer)
        return results

    # -- the answer -----------------------------------------------------------------------------------------

    def _answer(self, prepared, ledger: Ledger, results: list[ToolResult], answer: Answer, cancel) -> Iterator[Event]:
        blocks: dict[int, str] = {}
        for result in results:
            packed = getattr(result.payload, "packed", None)
            for hit in packed.used if packed else ():
                n = ledger.peek(hit)
                blocks.setdefault(n, block(n, hit))
        messages, built, shown_numbers = self.window.build(prepared, sorted(blocks.items()))
        yield built
        answer.prompt_tokens = built.prompt_tokens
        shown = shown_map(ledger.citations(), shown_numbers)
        if not shown:
            answer.status = "insufficient_evidence"
            answer.text = f"{NOT_COVERED} search_docs found no excerpt for this question."
            yield AnswerFinished(answer)
            return
        options = replace(self.settings.generation, max_tokens=min(self.settings.generation.max_tokens, built.reserve))
        if self.settings.decoding == "constrained":
            options = replace(options, grammar=citation_grammar(sorted(shown)))
        elif self.settings.decoding == "guarded":
            options = replace(options, guard=MarkerGuard(sorted(shown)))
        pieces: list[str] = []
        guard = RepetitionGuard()
        stop = CancelToken()  # the user's cancel, or the guard's
        try:
            for delta in self.model.stream(messages, options, _Either(cancel, stop)):
                pieces.append(delta)
                yield TextDelta(delta)
                if guard.feed(delta):
                    stop.cancel()
                    answer.trace.append({"stopped": "the answer started repeating itself"})
                    break
        except (ModelError, ValueError) as exc:
            yield ErrorEvent(f"generation failed: {exc}", fatal=True)
            answer.status = "error"
        stats = self.model.last_stats
        answer.text = answer.model_text = "".join(pieces).strip()
        answer.completion_tokens = stats.completion_tokens
        answer.time_to_first_token = stats.time_to_first_token
        answer.total_time = stats.total_time
        answer.tokens_per_second = stats.tokens_per_second
        if cancel.cancelled:
            answer.status = "cancelled"
        elif answer.status != "error" and abstains(answer.text):
            answer.status = "insufficient_evidence"
        self._check(answer, shown, prepared.question)
        yield AnswerFinished(answer)

    def _check(self, answer: Answer, shown, question: str) -> None:
        result = check_answer(answer.model_text, shown, self.retriever.chunk, self.judge)
        supported = any(c.verdict == "supported" for c in result.citations)
        if self.fallback is not None and self.settings.fallback and answer.status == "answered" and not supported:
            quoted = self.fallback(question, shown, self.retriever.chunk)
            if quoted:
                quote_text, _numbers = quoted
                answer.quoted = True
                answer.text = f"{close_code(answer.model_text)}\n\n{quote_text}".strip()
                # Checked apart: an unclosed backtick in the model's words must not hide the quotes' markers.
                result = merge_checks(result, check_answer(quote_text, shown, self.retriever.chunk, self.judge))
            else:
                # Nothing the model wrote holds, and no excerpt sentence comes close to the question.
                answer.status = "insufficient_evidence"
                answer.text = f"{close_code(answer.model_text)}\n\n{UNSUPPORTED_NOTE}".strip()
        answer.citations = result.citations
        answer.claims = result.claims
        answer.unknown = result.unknown
        answer.unresolved = result.unresolved


def close_code(text: str) -> str:
    """Close a code fence or span the model left open, so text appended after it is not swallowed by it."""
    if text.count("```") % 2:
        text += "\n```"
    elif text.count("`") % 2:
        text += "`"
    return text


_ANAPHORA = re.compile(r"\b(it|its|it's|this|that|these|those|they|them|their|there|he|she|one|ones|same|above|more)\b", re.I)


def follow_up_query(question: str, history: Sequence[tuple[str, str]]) -> str:
    """The search query of a search-first turn: a short or pronoun-led follow-up borrows the previous question."""
    if not history:
        return question
    words = question.split()
    if len(words) <= 4 or _ANAPHORA.search(" ".join(words[:6])):
        return f"{history[-1][0]}\n{question}"
    return question


class _Either:
    """Cancelled when either token is."""

    def __init__(self, *tokens: CancelToken) -> None:
        self.tokens = tokens

    @property
    def cancelled(self) -> bool:
        return any(t.cancelled for t in self.tokens)


def _grammar_schema() -> dict:
    """The search_docs arguments in a grammar-friendly form (short query, k); the validator still checks all."""
    props = SEARCH_DOCS_SCHEMA["properties"]
    return {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 120}, "k": props["k"]},
        "required": ["query"],
        "additionalProperties": False,
    }


