"""The context window: every prompt is rendered with the model's template and counted whole against n_ctx.

Layers, in prefix-reuse order: system rules, evidence, history, the new question. What is dropped to fit is
recorded, one line each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from agent.errors import AgentError
from agent.events import ContextBuilt
from agent.turn.prompts import QUESTION_SUFFIX, SYSTEM_RULES, evidence_message, question_message
from models.protocols import Tokenizer
from rag.excerpts.packing import join_blocks
from rag.excerpts.search_tool import DEFAULT_MAX_TOKENS


class ContextOverflow(AgentError):
    """Nothing can be dropped and the prompt still does not fit."""


@dataclass(frozen=True)
class Budgets:
    n_ctx: int = 2048
    reserve: int = 256  # kept free for the answer (the generation's max_tokens)
    question_max: int = 256
    history_max: int = 640
    evidence_max: int = DEFAULT_MAX_TOKENS
    evidence_min: int = 320  # older history is dropped before evidence gets less than this

    @property
    def prompt_limit(self) -> int:
        return self.n_ctx - self.reserve

    @classmethod
    def for_window(cls, n_ctx: int) -> "Budgets":
        """The default budgets for a model whose window is not 2048: history and evidence scale with it."""
        base = cls()
        scale = n_ctx / base.n_ctx
        return cls(n_ctx=n_ctx, history_max=int(base.history_max * scale), evidence_max=int(base.evidence_max * scale))


@dataclass
class Prepared:
    """The question and history as they will be sent, and the room left for evidence."""

    question: str
    history: list[tuple[str, str]]
    evidence_budget: int
    omissions: list[str] = field(default_factory=list)


class ContextWindow:
    def __init__(
        self, tokenizer: Tokenizer, budgets: Budgets = Budgets(), system: str = SYSTEM_RULES, suffix: str = QUESTION_SUFFIX
    ) -> None:
        if budgets.prompt_limit <= 0:
            raise ValueError(f"the answer reserve ({budgets.reserve}) leaves no room in n_ctx={budgets.n_ctx}")
        self.tokenizer = tokenizer
        self.budgets = budgets
        self.system = system
        self.suffix = suffix  # what the question message ends with: how to answer

    def messages(self, question: str, history: Sequence[tuple[str, str]], evidence: str | None) -> list[dict]:
        msgs = [{"role": "system", "content": self.system}, evidence_message(evidence)]
        for q, a in history:
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": a})
        msgs.append(question_message(question, self.suffix))
        return msgs

    def _count(self, question: str, history, evidence: str | None) -> int:
        return self.tokenizer.count_chat(self.messages(question, history, evidence))

    def _cut_question(self, question: str, max_tokens: int) -> str:
        ids = self.tokenizer.encode(question)
        if len(ids) <= max_tokens:
            return question
        return self.tokenizer.decode(ids[: max(1, max_tokens - 2)]).rstrip() + " …"

    def prepare(self, question: str, history: Sequence[tuple[str, str]]) -> Prepared:
        """Fit question and history first, leaving as much room for evidence as the budgets allow."""
        b = self.budgets
        omissions: list[str] = []
        n_question = self.tokenizer.count(question)
        if n_question > b.question_max:
            question = self._cut_question(question, b.question_max)
            omissions.append(f"question cut from {n_question} to {b.question_max} tokens")
        kept = list(history)
        no_history = self._count(question, [], "")
        # History layer: newest turns first, whole turns only, within history_max.
        while kept and self._count(question, kept, "") - no_history > b.history_max:
            kept.pop(0)
            omissions.append("oldest turn of history dropped (history budget)")
        while True:
            room = b.prompt_limit - self._count(question, kept, "")
            if room >= b.evidence_min or not kept:
                break
            kept.pop(0)
            omissions.append("oldest turn of history dropped (room for evidence)")
        if room < 0:  # only a huge question can get here
            question = self._cut_question(question, max(8, self.tokenizer.count(question) + room - 8))
            omissions.append("question cut further to fit the context")
            room = b.prompt_limit - self._count(question, kept, "")
        return Prepared(question, kept, max(0, min(b.evidence_max, room)), omissions)

    def build(self, prepared: Prepared, blocks: Sequence[tuple[int, str]]) -> tuple[list[dict], ContextBuilt, list[int]]:
        """The final messages, checked whole; drops evidence blocks from the end, then history, if over."""
        b = self.budgets
        blocks = list(blocks)
        history = list(prepared.history)
        question = prepared.question
        omissions = list(prepared.omissions)

        def evidence() -> str | None:
            return join_blocks([text for _, text in blocks]) if blocks else None

        total = self._count(question, history, evidence())
        while total > b.prompt_limit and blocks:
            n, _ = blocks.pop()
            omissions.append(f"excerpt [{n}] dropped: the whole prompt was over {b.prompt_limit} tokens")
            total = self._count(question, history, evidence())
        while total > b.prompt_limit and history:
            history.pop(0)
            omissions.append("oldest turn of history dropped (whole prompt over budget)")
            total = self._count(question, history, evidence())
        while total > b.prompt_limit:
            n_question = self.tokenizer.count(question)
            if n_question <= 8:
                raise ContextOverflow(
                    f"the system rules alone do not fit n_ctx={b.n_ctx} with a {b.reserve}-token answer reserve"
                )
            question = self._cut_question(question, max(8, n_question // 2))
            omissions.append("question cut to fit the context")
            total = self._count(question, history, evidence())
        msgs = self.messages(question, history, evidence())
        event = ContextBuilt(
            prompt_tokens=total,
            n_ctx=b.n_ctx,
            reserve=b.reserve,
            layers=self.layers(msgs),
            omissions=tuple(omissions),
        )
        return msgs, event, [n for n, _ in blocks]

    def layers(self, msgs: list[dict]) -> dict[str, int]:
        """Tokens each layer adds, as differences of whole-prompt counts (never sums of piece counts)."""
        count = self.tokenizer.count_chat
        system = count(msgs[:1], add_generation_prompt=False)
        with_evidence = count(msgs[:2], add_generation_prompt=False)
        with_history = count(msgs[:-1], add_generation_prompt=False)
        total = count(msgs)
        return {
            "system": system,
            "evidence": with_evidence - system,
            "history": with_history - with_evidence,
            "question": total - with_history,
        }
