"""The citation view: the full chunk behind one `[n]`, with its file, heading, lines and verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from agent.events import Answer
from agent.surfaces.tui import verdicts as v
from agent.surfaces.tui.messages import CopyQuote, OpenSource
from rag.types import Chunk, Hit
from rag.verification.verdicts import CitationVerdict, ClaimVerdict, Verdict


@dataclass(frozen=True)
class CitationInfo:
    """Everything known about one source: what the model saw (hit), what is stored (chunk), how it was judged."""

    n: int | None
    verdict: str | None = None
    citation: CitationVerdict | None = None
    hit: Hit | None = None
    chunk: Chunk | None = None
    claims: tuple[ClaimVerdict, ...] = field(default_factory=tuple)

    @property
    def source(self) -> Chunk | None:
        return self.chunk or (self.hit.chunk if self.hit else None)


def citation_infos(shown: dict[int, Hit], answer: Answer | None, lookup: Callable[[str | None], Chunk | None]) -> list[CitationInfo]:
    """Every source of one answer, by number: the excerpt the model saw, the stored chunk, the verdicts."""
    verdicts = v.verdict_map(answer) if answer else {}
    citations = {c.n: c for c in answer.citations} if answer else {}
    infos = []
    for n in sorted(set(shown) | set(verdicts)):
        citation, hit = citations.get(n), shown.get(n)
        chunk_id = (citation.chunk_id if citation else None) or (hit.chunk_id if hit else None)
        chunk = None if verdicts.get(n) is Verdict.MADE_UP else lookup(chunk_id)
        claims = tuple(c for c in answer.claims if n in c.citations) if answer else ()
        infos.append(CitationInfo(n, verdicts.get(n), citation, hit, chunk, claims))
    return infos


def highlighted(text: str, evidence: str | None) -> Content:
    """The chunk text with the best-matching sentence highlighted, when it occurs in it."""
    content = Content(text)
    if evidence:
        start = text.find(evidence.strip())
        if start >= 0:
            content = content.stylize(".citation--evidence", start, start + len(evidence.strip()))
    return content


def header(info: CitationInfo) -> Content:
    verdict = info.verdict
    parts: list = []
    if info.n is not None:
        style = f".{v.css_class(verdict or 'uncited')}"
        label = f"[{info.n}] {Verdict.of(verdict).mark} {Verdict.of(verdict).label}" if verdict else f"[{info.n}] not cited in the answer"
        parts.append((label, style))
    if info.citation and info.citation.support is not None:
        parts.append(f"  support {info.citation.support:.2f}")
    source = info.source
    if source is not None:
        if parts:
            parts.append("\n")
        parts += [(source.uri, "bold"), f"  {source.where}"]
        if source.heading:
            parts += ["\n", (source.heading, "italic")]
        parts += ["\n", (f"chunk {source.chunk_id}", "dim")]
    return Content.assemble(*parts)


def body(info: CitationInfo) -> Content:
    if info.verdict is Verdict.MADE_UP:
        return Content(
            f"The answer cites [{info.n}], but no excerpt numbered {info.n} was given to the model: "
            "the number is made up, and nothing here supports the claim it is attached to."
        )
    source = info.source
    if source is None:
        chunk_id = info.citation.chunk_id if info.citation else None
        return Content(f"Chunk {chunk_id or '?'} is not in the index any more: re-index the docs (smoldocs index).")
    evidence = info.citation.evidence if info.citation else None
    return highlighted(source.text, evidence)


def claims_text(info: CitationInfo) -> Content:
    title = f"What the answer says with [{info.n}]:" if info.n is not None else "Claims:"
    lines = [Content.assemble((title, "dim")), *(
        Content.assemble((f"{Verdict.of(c.verdict).mark} ", f".{v.css_class(c.verdict)}"), c.text)
        for c in info.claims
    )]
    return Content("\n").join(lines)


class CitationScreen(ModalScreen[None]):
    """Esc closes; Left/Right step through the answer's other sources."""

    COMPONENT_CLASSES = v.COMPONENT_CLASSES | {"citation--evidence"}
    BINDINGS = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("left", "step(-1)", "Previous source"),
        Binding("right", "step(1)", "Next source"),
        Binding("c", "copy_quote", "Copy quote"),
        Binding("o", "open('pager')", "Open in pager"),
        Binding("e", "open('editor')", "Open in editor"),
    ]

    def __init__(self, infos: list[CitationInfo], index: int = 0) -> None:
        super().__init__()
        self.infos = infos
        self.index = index

    def compose(self) -> ComposeResult:
        with Vertical(id="citation-dialog", classes="dialog"):
            yield Static(id="citation-header")
            with VerticalScroll(id="citation-body"):
                yield Static(id="citation-claims")
                yield Static(id="citation-text")
            yield Static("Esc close · ←/→ other sources · c copy quote · o open in $PAGER · e in $EDITOR", classes="dialog-hint")

    def on_mount(self) -> None:
        self._show()

    def _show(self) -> None:
        info = self.infos[self.index]
        self.query_one("#citation-header", Static).update(header(info))
        claims = self.query_one("#citation-claims", Static)
        claims.update(claims_text(info))
        claims.display = bool(info.claims)
        self.query_one("#citation-text", Static).update(body(info))
        self.query_one("#citation-body").scroll_home(animate=False)

    def action_step(self, delta: int) -> None:
        self.index = (self.index + delta) % len(self.infos)
        self._show()

    @property
    def info(self) -> CitationInfo:
        return self.infos[self.index]

    def action_copy_quote(self) -> None:
        self.post_message(CopyQuote(self.info))

    def action_open(self, opener: str) -> None:
        self.post_message(OpenSource(self.info, opener))

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
