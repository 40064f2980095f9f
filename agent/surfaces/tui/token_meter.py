"""The token meter: the last prompt against n_ctx as a stacked bar, and what was dropped to fit."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from agent.events import ContextBuilt, SearchFinished

LAYERS = ("system", "evidence", "history", "question")
GLYPHS = {"reserve": "▒", "free": "·"}
SEGMENTS = (*LAYERS, "template", "reserve", "free")
COMPONENT_CLASSES = {f"meter--{name}" for name in SEGMENTS}


def segments(ctx: ContextBuilt) -> list[tuple[str, int]]:
    """(name, tokens) in bar order. Counts are not additive: whatever the whole prompt holds beyond the
    layers' own counts (template tokens, joins) shows as `template`."""
    names = [*LAYERS, *(k for k in ctx.layers if k not in LAYERS)]
    parts = [(name, int(ctx.layers.get(name, 0))) for name in names]
    extra = ctx.prompt_tokens - sum(n for _, n in parts)
    if extra > 0:
        parts.append(("template", extra))
    parts.append(("reserve", ctx.reserve))
    parts.append(("free", max(0, ctx.n_ctx - ctx.prompt_tokens - ctx.reserve)))
    return [(name, n) for name, n in parts if n > 0]


def cells(parts: list[tuple[str, int]], width: int) -> list[int]:
    """Split `width` cells among parts in proportion (largest remainder); every non-empty part gets one."""
    total = sum(n for _, n in parts)
    if total <= 0 or width <= 0:
        return [0] * len(parts)
    exact = [n * width / total for _, n in parts]
    given = [max(1, int(x)) for x in exact]
    while sum(given) > width and max(given) > 1:
        given[given.index(max(given))] -= 1
    order = sorted(range(len(parts)), key=lambda i: exact[i] - int(exact[i]), reverse=True)
    for i in order[: max(0, width - sum(given))]:
        given[i] += 1
    return given


def bar(ctx: ContextBuilt | None, width: int) -> Content:
    if ctx is None:
        return Content("·" * width).stylize(".meter--free")
    parts = segments(ctx)
    pieces = [
        (GLYPHS.get(name, "█") * count, f".meter--{name if name in SEGMENTS else 'template'}")
        for (name, _), count in zip(parts, cells(parts, width))
    ]
    return Content.assemble(*pieces)


def used_label(ctx: ContextBuilt | None) -> str:
    if ctx is None:
        return "no prompt yet"
    return f"{ctx.prompt_tokens:,}/{ctx.n_ctx:,} tokens"


class TokenBar(Widget):
    """One line under the chat: the last prompt's stacked bar and its count."""

    COMPONENT_CLASSES = COMPONENT_CLASSES
    DEFAULT_CSS = "TokenBar { height: 1; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.context: ContextBuilt | None = None

    def show(self, ctx: ContextBuilt | None) -> None:
        self.context = ctx
        self.refresh()

    def render(self) -> Content:
        label = f" {used_label(self.context)}  ^T "
        width = max(4, self.size.width - len(label) - 8)
        return Content.assemble(("context ", "dim"), bar(self.context, width), (label, "dim"))


def meter_legend(ctx: ContextBuilt) -> Content:
    rows = []
    for name, count in segments(ctx):
        glyph = GLYPHS.get(name, "█")
        share = 100 * count / ctx.n_ctx if ctx.n_ctx else 0
        rows.append(
            Content.assemble(
                (glyph * 2, f".meter--{name if name in SEGMENTS else 'template'}"),
                f" {name:<10}{count:>6,} tokens {share:5.1f}%",
            )
        )
    rows.append(Content(f"   {'prompt':<10}{ctx.prompt_tokens:>6,} tokens, counted whole with the chat template"))
    rows.append(Content(f"   {'n_ctx':<10}{ctx.n_ctx:>6,} tokens"))
    return Content("\n").join(rows)


def omissions(ctx: ContextBuilt | None, searches: list[SearchFinished]) -> Content:
    lines = [f"• {line}" for line in (ctx.omissions if ctx else ())]
    for search in searches:
        for o in search.omissions:
            lines.append(f"• search “{search.query}”: {o.chunk_id} ({o.why})")
    return Content("\n".join(lines) if lines else "Nothing was dropped: everything fit.")


class TokenScreen(ModalScreen[None]):
    """Ctrl+T: the budget of the last prompt, layer by layer, and the omissions record."""

    COMPONENT_CLASSES = COMPONENT_CLASSES
    BINDINGS = [Binding("escape,q,ctrl+t", "dismiss", "Close")]

    def __init__(self, ctx: ContextBuilt | None, searches: list[SearchFinished], answer_tokens: int = 0) -> None:
        super().__init__()
        self.ctx = ctx
        self.searches = searches
        self.answer_tokens = answer_tokens

    def compose(self) -> ComposeResult:
        with Vertical(id="token-dialog", classes="dialog"):
            yield Static("Token budget of the last prompt", classes="dialog-title")
            if self.ctx is None:
                yield Static("No prompt yet: ask a question first.")
            else:
                yield Static(id="token-bar")
                yield Static(meter_legend(self.ctx), id="token-legend")
                if self.answer_tokens:
                    yield Static(f"The answer used {self.answer_tokens:,} of the {self.ctx.reserve:,} reserved tokens.")
                yield Static("Omissions (what was dropped to fit)", classes="dialog-subtitle")
                with VerticalScroll(id="token-omissions"):
                    yield Static(omissions(self.ctx, self.searches))
            yield Static("Esc close", classes="dialog-hint")

    def on_resize(self) -> None:
        if self.ctx is not None:
            target = self.query_one("#token-bar", Static)
            target.update(bar(self.ctx, max(10, target.size.width)))

    def on_mount(self) -> None:
        self.call_after_refresh(self.on_resize)

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
