"""One agent turn as a generator of typed events: search, fit the context, stream the answer, check it."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Generator, Iterator, Mapping, Sequence

from agent.turn.context import ContextWindow
from agent.events import (
    Answer,
    AnswerFinished,
    AnswerStatus,
    ErrorEvent,
    Event,
    SearchFinished,
    SearchStarted,
    TextDelta,
    ToolStep,
    TurnStarted,
)
from agent.turn.grammars import tool_call_grammar
from agent.turn.modes import Turn, mode_for, shown_excerpts
from agent.turn.outcome import Facts, Outcome, decide, wants_quotes
from agent.turn.repetition import RepetitionGuard
from agent.turn.prompts import (
    QUESTION_SUFFIX, QUOTE_QUESTION_SUFFIX, neutralize, placeholder_query,
    system_rules, tool_rules,
)
from agent.turn.quoting import QuoteCandidates, Span
from agent.turn.verified import Display, verified_quotes
from agent.settings import AgentSettings
from agent.turn.toolcalls import ParseFailure, parse_tool_calls
from agent.turn.tools import Tool, ToolRegistry, ToolResult
from models.errors import ModelError, ServerInterrupted
from models.llama_cpp.grammar import json_schema_grammar
from models.protocols import CancelToken, ChatModel, GenerationOptions
from rag import markers
from rag.excerpts.conflicts import find_conflicts
from rag.answering.answerability import absent_names
from rag.answering.extractive import Quoter
from rag.citations import CitationLike, resolved_texts
from rag.excerpts.document_tool import GET_DOCUMENT_DESCRIPTION, GET_DOCUMENT_NAME, GET_DOCUMENT_SCHEMA, get_document_tool
from rag.excerpts.packing import Ledger, block
from rag.excerpts.search_tool import (
    SEARCH_DOCS_DESCRIPTION, SEARCH_DOCS_NAME, SEARCH_DOCS_SCHEMA, Reorder, search_docs_tool, search_first_arguments,
)
from rag.types import Hit, Retriever
from rag.verification.verdicts import Judge, Verification
from rag.verification.verifier import Verifier

@dataclass
class Generation:
    """What one answer generation produced, before it is checked."""

    text: str = ""
    failed: bool = False
    interrupted: bool = False  # the server stopped mid-answer: what streamed is kept
    stop_reason: str | None = None

    def status(self, cancel: CancelToken) -> AnswerStatus:
        """How the generation ended: answered, cancelled, interrupted or failed."""
        if cancel.cancelled:
            return AnswerStatus.CANCELLED
        if self.failed:
            return AnswerStatus.INTERRUPTED if self.interrupted else AnswerStatus.ERROR
        return AnswerStatus.ANSWERED


class Agent:
    """Answers one question at a time over a retriever; `run` yields the events of one turn."""

    def __init__(
        self,
        model: ChatModel,
        retriever: Retriever,
        settings: AgentSettings = AgentSettings(),
        judge: Judge | None = None,
        quoter: Quoter | None = None,
        candidates: QuoteCandidates | None = None,
        reorder: Reorder | None = None,
    ) -> None:
        self.model = model
        self.reorder = reorder  # search hits reordered before packing (rag.answering.passages); None: as ranked
        self.retriever = retriever
        self.settings = settings
        self.judge: Judge = judge or Verifier(None)
        self.quoter = quoter  # quotes of the shown excerpts when nothing the model wrote is supported
        self.candidates = candidates  # quote decoding: the sentences the model may copy
        self.mode = mode_for(settings.resolve_decoding(model.n_params))  # how the answer is made (agent.turn.modes)
        self.window = ContextWindow(
            model.tokenizer, settings.budgets, system_rules(settings.few_shot, settings.decoding),
            QUOTE_QUESTION_SUFFIX if self.mode.quoting else QUESTION_SUFFIX,
        )
        self.policy = settings.resolve_policy(model.n_params)
        if self.policy == "search-first":  # the rules' KV state on disk: a faster cold start
            model.cache_prefix([{"role": "system", "content": self.window.system}])
        self._calls_made = 0  # call ids of this turn's searches

    # -- the turn -------------------------------------------------------------------------------------------

    def run(
        self,
        question: str,
        history: Sequence[tuple[str, str]] = (),
        cancel: CancelToken | None = None,
        sources: Mapping[int, str] | None = None,
    ) -> Iterator[Event]:
        """One turn. `sources` maps the previous answer's `[n]` to chunk ids, for follow-ups such as "more on [2]"."""
        cancel = cancel or CancelToken()
        self._calls_made = 0
        yield TurnStarted(question=question, turn=len(history), policy=self.policy)
        n_ctx = self.window.budgets.n_ctx
        if not question.strip():
            yield self.concluded(Facts(asked=False), Answer(question, "", AnswerStatus.ANSWERED, n_ctx=n_ctx))
            return
        # History answers lose their [n]: numbers belong to the ledger of the run that wrote them.
        history = [(q, markers.strip(a)) for q, a in history]
        # "Show me the whole section of [2]": the previous turn's [2] is read whole with get_document, and the
        # question is renumbered to this turn's ledger, where that chunk becomes [1].
        referenced = cited_sources(question, sources or {})
        renumbered = renumber(question, {n: referenced.index(c) + 1 for n, c in (sources or {}).items() if c in referenced})
        prepared = self.window.prepare(renumbered, history)
        ledger = Ledger()
        results: list[ToolResult] = []
        if referenced:
            calls = [(GET_DOCUMENT_NAME, {"source_id": chunk_id}) for chunk_id in referenced]
            results += yield from self._run_calls(calls, ledger, prepared.evidence_budget)
        elif self.policy == "search-first":
            args = search_first_arguments(follow_up_query(question, history), self.settings.k)
            results += yield from self._run_calls([(SEARCH_DOCS_NAME, args)], ledger, prepared.evidence_budget)
        else:
            results += yield from self._model_steps(prepared.question, prepared.history, ledger, prepared.evidence_budget, cancel)
        if cancel.cancelled:
            yield self.concluded(Facts(status=AnswerStatus.CANCELLED), Answer(question, "", AnswerStatus.ANSWERED, n_ctx=n_ctx))
            return
        yield from self._answer(question, prepared, ledger, results, cancel)

    # -- tools ----------------------------------------------------------------------------------------------

    def _registry(self, ledger: Ledger, budget: int) -> ToolRegistry:
        tool = search_docs_tool(self.retriever, ledger, self.model.tokenizer, max_tokens=budget, reorder=self.reorder)
        document = get_document_tool(self.retriever, ledger, self.model.tokenizer, max_tokens=budget)
        return ToolRegistry({
            SEARCH_DOCS_NAME: Tool(SEARCH_DOCS_NAME, SEARCH_DOCS_DESCRIPTION, SEARCH_DOCS_SCHEMA, tool),
            GET_DOCUMENT_NAME: Tool(GET_DOCUMENT_NAME, GET_DOCUMENT_DESCRIPTION, GET_DOCUMENT_SCHEMA, document),
        })

    def _run_calls(
        self, calls, ledger: Ledger, budget: int, by_model: bool = False
    ) -> Generator[Event, None, list[ToolResult]]:
        """Run tool calls (in parallel threads when several), sharing the run's ledger; returns their results."""
        registry = self._registry(ledger, budget // max(1, len(calls)))
        base = self._calls_made
        self._calls_made += len(calls)
        for i, (_name, args) in enumerate(calls):
            a = args if isinstance(args, dict) else {}
            k = a.get("k", 5)
            doc_ids = a.get("doc_ids")
            yield SearchStarted(
                query=_query_of(a),
                k=k if isinstance(k, int) else 5,
                doc_ids=tuple(map(str, doc_ids)) if isinstance(doc_ids, list) else (),
                call_id=base + i,
                by_model=by_model,
            )
        if len(calls) == 1:
            results = [registry.call(*calls[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(calls)) as pool:
                results = list(pool.map(lambda c: registry.call(*c), calls))
        for i, result in enumerate(results):
            packed = result.packed
            excerpts = tuple((ledger.peek(h), h.chunk_id) for h in (packed.used if packed else ()))
            yield SearchFinished(
                query=_query_of(result.arguments),
                hits=tuple(result.payload.hits) if result.payload is not None else (),
                packed=tuple(n for n, _ in excerpts),
                dropped=packed.dropped if packed else 0,
                omissions=tuple(packed.omissions) if packed else (),
                result=result.text,
                error=result.error,
                call_id=base + i,
                excerpts=excerpts,
                arguments=result.arguments,
                by_model=by_model,
                searched=result.payload.searched if result.payload is not None else "",
            )
        return results

    def _model_steps(self, question, history, ledger, budget, cancel) -> Generator[Event, None, list[ToolResult]]:
        """The model chooses its searches: up to max_steps - 1 tool rounds, errors fed back as results."""
        registry = self._registry(ledger, budget)
        options = self.settings.tool_generation
        specs = registry.specs()
        if self.settings.tool_grammar and self.model.supports_grammar:
            options = replace(options, grammar=tool_call_grammar(SEARCH_DOCS_NAME, json_schema_grammar(_grammar_schema())))
            # The grammar only writes search_docs calls: telling the model of get_document would waste its prompt.
            specs = [s for s in specs if s["name"] == SEARCH_DOCS_NAME]
        messages = [{"role": "system", "content": tool_rules(specs)}]
        for q, a in history:
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        messages.append({"role": "user", "content": neutralize(question)})
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
            yield ToolStep(text, len(calls), tuple(f.reason for f in failures))
            if not calls and not failures:
                break  # the model answered without searching
            step: list[ToolResult] = []
            if calls:
                step = yield from self._run_calls([(c.name, c.arguments) for c in calls], ledger, budget, by_model=True)
            results += step
            if any(r.found for r in step):
                break  # a source_not_found goes back to the model like an error: it can search instead
            feedback = "; ".join([r.text for r in step] + [f"Error: {f.reason}" for f in failures])
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": f"Tool result: {feedback}"}]
        if not any(r.ok for r in results) and not cancel.cancelled:
            # The model never produced a usable search: search the question itself rather than answer blind.
            args = search_first_arguments(question, self.settings.k)
            results += yield from self._run_calls([(SEARCH_DOCS_NAME, args)], ledger, budget)
        return results

    # -- the answer -----------------------------------------------------------------------------------------

    def _answer(self, question: str, prepared, ledger: Ledger, results: list[ToolResult], cancel) -> Iterator[Event]:
        """Show the excerpts the mode offers, then let the mode answer."""
        blocks, hits = _blocks(results, ledger)
        spans: list[Span] = []
        if blocks:
            spans, blocks = self.mode.offer(self, question, ledger, blocks)
            if not blocks:
                empty = Answer(question, "", AnswerStatus.ANSWERED, n_ctx=self.window.budgets.n_ctx)
                yield self.concluded(self.absent(Facts(offered=False), question), empty)
                return
        order = list(blocks.items()) if self.mode.quoting else sorted(blocks.items())  # quote blocks: best candidate first
        messages, built, shown_numbers = self.window.build(prepared, order)
        yield built
        conflicts = tuple(c.to_json() for c in find_conflicts([(n, hits[n]) for n in shown_numbers if n in hits]))
        base = Answer(question, "", AnswerStatus.ANSWERED, prompt_tokens=built.prompt_tokens, n_ctx=built.n_ctx, conflicts=conflicts)
        shown = shown_excerpts(ledger.citations(), shown_numbers)
        if not shown:
            yield self.concluded(self.absent(Facts(shown=False), question), base)
            return
        yield from self.mode.respond(self, Turn(question, messages, built.reserve, shown, spans, base, cancel))

    # -- what modes use -------------------------------------------------------------------------------------

    def absent(self, facts: Facts, question: str, shown: Mapping[int, CitationLike] | None = None) -> Facts:
        """`facts` with what a decline names: the question's names that the docs never mention, and, once excerpts
        were shown, those that none of them mentions (rag.answering.answerability.absent_names)."""
        excerpts = resolved_texts(shown.values(), self.retriever.chunk) if shown else ()
        unknown, unshown = absent_names(question, excerpts, self.retriever.vocabulary)
        return replace(facts, unknown=unknown, unshown=unshown if shown else ())

    @staticmethod
    def concluded(facts: Facts, base: Answer, verification: Verification | None = None) -> AnswerFinished:
        """The turn ends with what agent.turn.outcome decides to show for `facts`, and the verdicts of it."""
        return AnswerFinished(shown_answer(base, decide(facts), verification))

    def answer_options(self, reserve: int) -> GenerationOptions:
        """The answer's generation settings, within the tokens the prompt left."""
        return replace(self.settings.generation, max_tokens=min(self.settings.generation.max_tokens, reserve))

    def generate(
        self, turn: Turn, options: GenerationOptions, opening: str = "", watch_repeats: bool = True
    ) -> Generator[Event, None, "Generation"]:
        """Stream the answer (TextDelta events); stops early when it starts repeating. Returns what was generated.

        `opening`: text the system wrote before the model's first token, streamed with it (quote decoding's `> `)."""
        out = Generation()
        pieces: list[str] = []
        repeats = RepetitionGuard()
        stop = CancelToken()  # the user's cancel, or the repetition guard's
        try:
            for delta in self.model.stream(turn.messages, options, _Either(turn.cancel, stop)):
                pieces.append(delta)
                yield TextDelta(opening + delta)
                opening = ""
                if watch_repeats and repeats.feed(delta):
                    stop.cancel()
                    out.stop_reason = "the answer started repeating itself"
                    break
        except (ModelError, ValueError) as exc:
            yield ErrorEvent(f"generation failed: {exc}", fatal=True)
            out.failed = True
            # A server that died mid-answer leaves a partial answer worth keeping, marked as such.
            out.interrupted = bool(pieces) and isinstance(exc, ServerInterrupted)
        out.text = "".join(pieces)
        return out

    def finished(
        self, turn: Turn, model_text: str, status: AnswerStatus, display: Display, generation: "Generation",
        abstained: bool = False,
    ) -> AnswerFinished:
        """The final answer of a written turn: only verified text shown, every number the model wrote judged."""
        facts = Facts(status=status, abstained=abstained, verified=display.text)
        quotes, quotes_checked = self._quotes(turn, facts)
        outcome = decide(replace(facts, quotes=quotes))
        if outcome.decline is not None:
            outcome = decide(self.absent(replace(facts, quotes=quotes), turn.question, turn.shown))
        # Every number the model wrote keeps its verdict (a made-up one is reported, and the eval counts them all)
        # though only supported claims are shown; a number used twice shows its weaker use.
        written = display.written or Verification((), ())
        # Nothing is judged twice: the quotes were judged as they are shown, the model's words as it wrote them.
        verification = written  # smoldocs' own note is not a claim to judge
        if outcome.quoted and quotes_checked:
            verification = written.merged(quotes_checked)
        elif outcome.text and outcome.decline is None and display.checked is not None:
            verification = written.merged(display.checked)
        stats = self.model.last_stats
        return AnswerFinished(
            replace(
                shown_answer(turn.base, outcome, verification),  # the shown text and all the model wrote, each judged
                model_text=model_text,
                draft=display.draft,
                completion_tokens=stats.completion_tokens,
                time_to_first_token=stats.time_to_first_token,
                total_time=stats.total_time,
                tokens_per_second=stats.tokens_per_second,
                stop_reason=generation.stop_reason,
            )
        )

    def _quotes(self, turn: Turn, facts: Facts) -> tuple[str, Verification | None]:
        """The fallback: the quotes of the shown excerpts the verifier holds, and their verdicts, sought only when
        nothing the model wrote holds ("" when none come close to the question)."""
        if self.quoter is None or not self.settings.fallback or not wants_quotes(facts):
            return "", None
        lookup = self.retriever.chunk
        quoted, verification = verified_quotes(self.quoter(turn.question, turn.shown, lookup), self.judge, turn.shown, lookup)
        return (quoted.text, verification) if quoted else ("", None)


def shown_answer(base: Answer, outcome: Outcome, verification: Verification | None = None) -> Answer:
    """`base` showing `outcome`, with the verdicts of what it shows (none for smoldocs' own note)."""
    verification = verification or Verification((), ())
    return replace(
        base, text=outcome.text, status=outcome.status, quoted=outcome.quoted, decline=outcome.decline,
        missing_from_docs=outcome.missing_from_docs, missing_from_excerpts=outcome.missing_from_excerpts,
        citations=verification.citations, claims=verification.claims,
    )


def _blocks(results: Sequence[ToolResult], ledger: Ledger) -> tuple[dict[int, str], dict[int, Hit]]:
    """The excerpt block and the hit of every number the turn's tool results packed, first use of each."""
    blocks: dict[int, str] = {}
    hits: dict[int, Hit] = {}
    for result in results:
        packed = result.packed
        for hit in packed.used if packed else ():
            n = ledger.peek(hit)
            blocks.setdefault(n, block(n, hit))
            hits.setdefault(n, hit)
    return blocks, hits


def cited_sources(question: str, sources: Mapping[int, str]) -> list[str]:
    """The chunk ids of the previous answer's numbers that `question` cites, in order, each once."""
    return list(dict.fromkeys(sources[n] for n in markers.numbers(question) if n in sources))


def renumber(text: str, numbers: Mapping[int, int]) -> str:
    """`text` with each marker's numbers mapped through `numbers` (others kept): [2] -> [1]."""
    return markers.replace(text, lambda ns: "[" + ", ".join(map(str, dict.fromkeys(numbers.get(n, n) for n in ns))) + "]")


def _query_of(arguments) -> str:
    """What a search looked for, or which source get_document read."""
    if not isinstance(arguments, dict):
        return ""
    return str(arguments.get("query", arguments.get("source_id", "")))


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


