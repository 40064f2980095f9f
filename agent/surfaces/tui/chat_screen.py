"""The chat screen: messages, sources, token meter and input. It talks only to the session and its events."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from agent.chats import ChatLog, ChatStore, stale_citations
from agent.errors import AgentError, UsageError
from agent.events import AnswerFinished, ContextBuilt, SearchFinished
from agent.session import Session
from agent.surfaces.tui import verdicts
from agent.surfaces.tui.chat_list_screen import ChatListScreen
from agent.surfaces.tui.citation_screen import CitationInfo, CitationScreen, citation_infos
from agent.surfaces.tui.conversation import Conversation
from agent.surfaces.tui.copy_text import answer_copy, quote_copy
from agent.surfaces.tui.help_screen import HelpScreen
from agent.surfaces.tui.history_input import HistoryInput
from agent.surfaces.tui.loading import LoadingPanel, describe_progress
from agent.surfaces.tui.message_list import AnswerView, MessageList, QuestionView, welcome_text
from agent.surfaces.tui.open_source import open_source
from agent.surfaces.tui.messages import (
    AnswerSelected,
    LoadProgress,
    OpenCitation,
    SearchResults,
    SessionFailed,
    SessionReady,
    SwitchFailed,
    TurnEnded,
    TurnEvent,
)
from agent.surfaces.tui.search_view import SearchResultsView
from agent.surfaces.tui.slash import Slash, export_arguments, parse_slash
from agent.surfaces.tui.sources_panel import SourcesPanel
from agent.surfaces.tui.status_line import StatusLine
from agent.surfaces.tui.switch_screen import SwitchScreen
from agent.surfaces.tui.switching import KINDS, Switch, switch_note
from agent.surfaces.tui.token_meter import TokenBar, TokenScreen
from agent.surfaces.tui.turns import error_line, run_turn
from agent.surfaces.tui.display_copy import display_copy
from models.protocols import CancelToken
from rag.printable import one_line, visible

if TYPE_CHECKING:
    from agent.surfaces.tui.app import SmoldocsApp
    from rag.indexing.build import IndexProgress

SessionFactory = Callable[..., Session]  # (progress=callback) -> a ChatSession
WIDE = 100  # the sources panel shows by default from this width


class ChatScreen(Screen):
    COMPONENT_CLASSES = verdicts.COMPONENT_CLASSES
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", show=False),
        Binding("ctrl+n", "new_chat", "New"),
        Binding("ctrl+o", "chat_list", "Chats"),
        Binding("ctrl+e", "export", "Export", priority=True),  # the input would take it as "end of line"
        Binding("ctrl+t", "token_meter", "Tokens"),
        Binding("ctrl+s", "toggle_sources", "Sources"),
        Binding("ctrl+y", "copy_answer", "Copy", show=False),
        Binding("f1", "help", "Help"),
        Binding("question_mark", "help", "Help", show=False),
        *(Binding(str(i), f"open_citation({i})", show=False) for i in range(1, 10)),
    ]

    def __init__(self, session_factory: SessionFactory, store: ChatStore) -> None:
        super().__init__()
        self.session_factory = session_factory
        self.conversation = Conversation(store)
        self.current_turn: int | None = None  # the answer the sources panel, 1-9 and Ctrl+T refer to
        self.last_context: ContextBuilt | None = None
        self.pending: list[str] = []  # asked while loading
        self.sources_shown: bool | None = None  # None: by width
        self._search_hits: dict[str, Any] = {}
        self.choice: dict[str, Path] = {}  # the folder or model switched to (agent.surfaces.tui.switching); {}: as started

    @property
    def session(self) -> Session | None:
        return self.conversation.session

    @property
    def busy(self) -> bool:
        return self.conversation.busy

    @property
    def message_list(self) -> MessageList:
        return self.query_one(MessageList)

    # -- layout -----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield LoadingPanel(id="loading")
                with MessageList(id="messages"):
                    yield self._welcome()
                yield TokenBar(id="token-bar")
                yield HistoryInput(placeholder="Ask about your docs…  (/help for commands)", id="question")
            yield SourcesPanel(id="sources")
        yield Footer()

    def _welcome(self) -> Static:
        return Static(welcome_text(self.session.docs_dir if self.session is not None else None), classes="welcome")

    def on_mount(self) -> None:
        self.query_one(HistoryInput).focus()
        self._load_session()

    def on_resize(self) -> None:
        self._place_sources()

    def _place_sources(self) -> None:
        shown = self.sources_shown if self.sources_shown is not None else self.size.width >= WIDE
        self.query_one(SourcesPanel).display = shown

    def on_unmount(self) -> None:
        self.conversation.close()
        if self.session is not None:  # a live index saves the embeddings made so far: the next start resumes there
            self.session.close()

    # -- loading ----------------------------------------------------------------------------------------
    @work(thread=True, exit_on_error=False, group="load")
    def _load_session(self, switch: Switch | None = None) -> None:
        if switch is not None and switch.old is not None:
            switch.old.close()  # first: one model and one live index at a time (it saves its embeddings)
        def progress(p: IndexProgress | str) -> None:
            self.post_message(describe_progress(display_copy(p)))

        try:
            session = self.session_factory(progress=progress, **(switch.choice if switch else {}))
        except Exception as exc:  # shown in the app: it stays up to say what went wrong
            why = visible(error_line(exc))
            self.post_message(SwitchFailed(why, switch) if switch and not switch.rollback else SessionFailed(why))
            return
        if switch is not None and switch.history:
            session.restore(switch.history)
        self.post_message(SessionReady(session, switch))

    def on_load_progress(self, message: LoadProgress) -> None:
        if self.session is None:
            self.query_one(LoadingPanel).show(message)
        elif message.stage == "embed":  # the live index embedding behind a usable prompt
            total = int(message.total or 0)
            self.query_one(StatusLine).set(embedding=(int(message.done or 0), total), index_size=total, chunking=None)
        elif message.stage == "chunk":  # a re-index reading files behind the prompt
            self.query_one(StatusLine).set(chunking=(int(message.done or 0), int(message.total or 0)))
        elif message.stage == "notice":  # a re-index, a vanished folder: one line, the chat goes on
            self.notify(message.label, timeout=8)

    async def on_session_ready(self, message: SessionReady) -> None:
        session = self.conversation.session = message.session
        self.query_one(LoadingPanel).display = False
        coverage = session.dense_coverage
        embedding = (round(coverage * session.index_size), session.index_size) if coverage < 1.0 else None
        self.query_one(StatusLine).set(
            model=session.model_name, index_size=session.index_size, docs=session.docs_dir,
            note=session.backend_note,
            notice=session.search_notice,
            embedding=embedding,
        )
        for welcome in self.query(".welcome").results(Static):
            welcome.update(welcome_text(session.docs_dir))
        switch = message.switch
        if switch is not None and not switch.rollback:
            await self._note(switch_note(switch.kind, switch.value, session.model_name, session.index_size), save=True)
        if self.pending:
            await self.ask(self.pending.pop(0))

    # -- switching the folder or the model -------------------------------------------------------------------
    def action_switch(self, kind: str) -> None:
        if self.busy or self.session is None:
            self.notify("Wait for the answer (or the loading) to finish first.", severity="warning")
            return
        current = self.session.docs_dir if kind == "docs" else self.session.model_name
        self.app.push_screen(SwitchScreen(kind, visible(str(current or ""))), partial(self._switch_to, kind))

    def _switch_to(self, kind: str, value: Path | None) -> None:
        """Close this session and open one over the new folder or model, carrying the chat over."""
        if value is None or self.busy or self.session is None:
            return
        previous = dict(self.choice)
        self.choice[kind] = value
        switch = Switch(kind, value, dict(self.choice), previous, self.session, self.conversation.turns_so_far())
        self.conversation.session = None  # questions asked meanwhile wait, as at start
        self._show_loading(f"Switching the {KINDS[kind]}…")
        self._load_session(switch)

    async def on_switch_failed(self, message: SwitchFailed) -> None:
        switch = message.switch
        self.choice = dict(switch.previous)
        await self._note(f"✗ Could not switch the {KINDS[switch.kind]} to {one_line(str(switch.value))}: "
                         f"{message.message}. Back on the one before.", save=True)
        self._show_loading("Opening the one before again…")
        self._load_session(Switch(switch.kind, switch.value, dict(switch.previous), switch.previous,
                                  history=switch.history, rollback=True))

    def _show_loading(self, label: str) -> None:
        panel = self.query_one(LoadingPanel)
        panel.display = True
        panel.show(LoadProgress(label))

    async def _note(self, text: str, save: bool = False) -> None:
        """A line in the conversation, where it happened (a switch), not a notice that goes away; `save`: kept in
        the chat's file too, so the chat shows it again when resumed."""
        if save:
            self.conversation.note(text)
        await self.message_list.mount(Static(Content(text), classes="switch-note"))
        self.call_after_refresh(self.message_list.follow, True)

    def on_session_failed(self, message: SessionFailed) -> None:
        panel = self.query_one(LoadingPanel)
        panel.add_class("-failed")
        panel.query_one("#loading-label", Static).update(Content(f"Could not start: {message.message}\nCtrl+Q quits."))
        self.notify(message.message, title="smoldocs could not start", severity="error", timeout=30)

    # -- asking -----------------------------------------------------------------------------------------
    @on(Input.Submitted, "#question")
    async def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        box = self.query_one(HistoryInput)
        box.remember(text)
        box.value = ""
        try:
            slash = parse_slash(text)
        except UsageError as exc:
            self.notify(str(exc), severity="error")
            return
        if slash is not None:
            await self.run_slash(slash)
        else:
            await self.ask(text[1:] if text.startswith("//") else text)

    async def ask(self, question: str) -> None:
        if self.busy:
            self.notify("Still answering: Esc cancels it.", severity="warning")
            return
        if self.session is None:
            self.pending.append(question)
            self.notify("Still loading: the question is asked as soon as the model is ready.")
            return
        first = self.conversation.log is None
        turn_id, log, cancel = self.conversation.begin()
        if first and self.conversation.unsaved:
            self.notify(one_line(f"This chat is not saved: {self.conversation.unsaved}. It goes on unsaved."), severity="error",
                        timeout=30)  # it matters for the whole chat: not gone in the default 5 s
        await self._add_turn(turn_id, question)
        self._run_turn(self.session, log, question, turn_id, cancel)

    async def _add_turn(self, turn_id: int, question: str) -> AnswerView:
        await self.query(".welcome").remove()
        question = display_copy(question)  # pasted or saved text may hold escapes too
        view = AnswerView(turn_id, question, id=f"turn-{turn_id}", classes="answer")
        await self.message_list.mount_all([QuestionView(question, classes="question"), view])
        self.call_after_refresh(self.message_list.follow, True)
        self._select(turn_id)
        return view

    @work(thread=True, exit_on_error=False, group="ask")
    def _run_turn(self, session: Session, log: ChatLog, question: str, turn_id: int, cancel: CancelToken) -> None:
        """Consume the session's events off the UI thread: save each one, then hand it to the UI."""
        save_failed = False

        def emit(event: Any) -> None:
            nonlocal save_failed
            try:
                log.record(event)
            except OSError as exc:  # keep answering; say once that the chat is not being saved
                if not save_failed:
                    save_failed = True
                    self.app.call_from_thread(self.notify, one_line(f"Could not save the chat: {exc}"), severity="error")
            self.post_message(TurnEvent(turn_id, display_copy(event)))  # saved as it came, shown escaped

        run_turn(session, question, cancel, emit)
        self.post_message(TurnEnded(turn_id))

    def _view(self, turn_id: int | None) -> AnswerView | None:
        found = self.query(f"#turn-{turn_id}") if turn_id is not None else None
        return found.first(AnswerView) if found else None

    async def on_turn_event(self, message: TurnEvent) -> None:
        view = self._view(message.turn_id)
        if view is not None:
            await view.apply(message.event)
            self._after_event(view, message.event)
            self.call_after_refresh(self.message_list.follow)

    def _after_event(self, view: AnswerView, event: Any) -> None:
        if isinstance(event, ContextBuilt):
            self.last_context = event
            self.query_one(TokenBar).show(event)
        elif isinstance(event, SearchFinished) and view.turn_id == self.current_turn:
            self.query_one(SourcesPanel).show(view.turn_id, view.excerpts(), None)
        elif isinstance(event, AnswerFinished):
            if view.turn_id == self.current_turn:
                self.query_one(SourcesPanel).show(view.turn_id, view.excerpts(), event.answer)
            if event.answer.tokens_per_second:
                self.query_one(StatusLine).set(tokens_per_second=event.answer.tokens_per_second)

    async def on_turn_ended(self, message: TurnEnded) -> None:
        self.conversation.end()
        if self.pending:
            await self.ask(self.pending.pop(0))

    def action_cancel(self) -> None:
        if self.conversation.stop():
            self.notify("Cancelling: what streamed so far is kept.")

    # -- slash commands ---------------------------------------------------------------------------------
    async def run_slash(self, slash: Slash) -> None:
        if slash.name == "help":
            self.action_help()
        elif slash.name == "clear":
            await self.action_new_chat()
        elif slash.name == "export":
            self.action_export(slash.argument or None)
        elif slash.name == "search":
            if self.session is None:
                self.notify("Still loading: try again in a moment.", severity="warning")
                return
            self._run_search(self.session, slash.argument)

    @work(thread=True, exit_on_error=False, group="search")
    def _run_search(self, session: Session, query: str) -> None:
        try:
            self.post_message(SearchResults(display_copy(query), display_copy(list(session.search(query, k=5)))))
        except Exception as exc:
            self.post_message(SearchResults(display_copy(query), [], error=visible(error_line(exc))))

    async def on_search_results(self, message: SearchResults) -> None:
        await self.query(".welcome").remove()
        self._search_hits.update((hit.chunk_id, hit) for hit in message.hits)
        await self.message_list.mount(SearchResultsView(message.query, message.hits, message.error, classes="search"))
        self.call_after_refresh(self.message_list.follow, True)

    # -- sources, citations, meters ---------------------------------------------------------------------
    def action_open_citation(self, n: int, turn_id: int | None = None) -> None:
        found = self._sources(n, turn_id)
        if found is not None:
            infos, index = found
            self.app.push_screen(CitationScreen(infos, index))

    def _sources(self, n: int, turn_id: int | None = None) -> tuple[list[CitationInfo], int] | None:
        """The sources of an answer (default: the current one) and where [n] is among them; None, said, if not."""
        view = self._view(self.current_turn if turn_id is None else turn_id)
        if view is None:
            self.notify("No answer yet: ask a question first.", severity="warning")
            return None
        infos = citation_infos(view.excerpts(), view.answer, self._shown_chunk)
        index = next((i for i, info in enumerate(infos) if info.n == n), None)
        if index is None:
            self.notify(f"This answer has no source [{n}].", severity="warning")
            return None
        return infos, index

    def source_numbers(self) -> list[int]:
        """The numbers of the current answer's sources that have a text: what Copy a quote and Open offer."""
        view = self._view(self.current_turn)
        if view is None:
            return []
        return [i.n for i in citation_infos(view.excerpts(), view.answer, self._shown_chunk)
                if i.n is not None and i.source is not None]

    # -- acting on an answer: copy it, open its sources ------------------------------------------------------
    @property
    def host(self) -> SmoldocsApp:
        """The app, with its clipboard and its way of running a program outside."""
        return cast("SmoldocsApp", self.app)

    @property
    def docs_dir(self) -> Path | str | None:
        """Where the sources' files are: a folder; a store's URL (no files here); None before loading."""
        return self.session.docs_dir if self.session is not None else None

    def action_copy_answer(self) -> None:
        view = self._view(self.current_turn)
        if view is None or view.answer is None:
            self.notify("No answer to copy yet: ask a question first.", severity="warning")
            return
        self.host.copy_text(answer_copy(view.answer, view.excerpts(), self.docs_dir), "the answer")

    def action_copy_quote(self, n: int) -> None:
        found = self._sources(n)
        if found is not None:
            self.copy_quote(found[0][found[1]])

    def copy_quote(self, info: CitationInfo) -> None:
        """The evidence sentence the checker matched, else the whole excerpt, with its `path:line`."""
        source = info.source
        if source is None:
            self.notify(f"Nothing to quote: [{info.n}] has no excerpt.", severity="warning")
            return
        quote = (info.citation.evidence if info.citation else None) or source.text
        self.host.copy_text(quote_copy(quote, source, self.docs_dir), f"a quote from [{info.n}]" if info.n else "a quote")

    def action_open_source(self, n: int, opener: str = "pager") -> None:
        found = self._sources(n)
        if found is not None:
            self.open_source(found[0][found[1]], opener)

    def open_source(self, info: CitationInfo, opener: str) -> None:
        """Show the source's file at its line in $PAGER or $EDITOR (a man page in man); the chat stays as it was."""
        if info.source is None:
            self.notify(f"Nothing to open: [{info.n}] has no excerpt.", severity="warning")
            return
        try:
            launch = open_source(info.source, self.docs_dir, opener)
        except UsageError as exc:
            self.notify(f"Cannot open it: {exc}", severity="warning", timeout=10)
            return
        if self.host.run_outside(launch) is not None:
            self.notify(f"Back from {launch.how}.")

    def on_answer_selected(self, message: AnswerSelected) -> None:
        self._select(message.turn_id)

    def _select(self, turn_id: int | None) -> None:
        """Make `turn_id` the answer the sources panel, 1-9 and Ctrl+T refer to."""
        self.current_turn = turn_id
        for each in self.query(AnswerView).results(AnswerView):
            each.set_class(each.turn_id == turn_id, "-current")
        view = self._view(turn_id)
        if view is not None:
            self.query_one(SourcesPanel).show(turn_id, view.excerpts(), view.answer)
            if view.context is not None:
                self.last_context = view.context
                self.query_one(TokenBar).show(view.context)

    def on_open_citation(self, message: OpenCitation) -> None:
        self.action_open_citation(message.n, message.turn_id)

    def action_open_chunk(self, chunk_id: str) -> None:
        info = CitationInfo(None, hit=self._search_hits.get(chunk_id), chunk=self._shown_chunk(chunk_id))
        self.app.push_screen(CitationScreen([info]))

    def _shown_chunk(self, chunk_id: str | None):
        return display_copy(self.conversation.chunk(chunk_id))

    def notify(self, message: str, **options) -> None:
        """Every notice is one literal line: an exception or a file name is never read as Textual markup."""
        options.setdefault("markup", False)
        super().notify(visible(message), **options)

    def action_toggle_sources(self) -> None:
        self.sources_shown = not self.query_one(SourcesPanel).display
        self._place_sources()

    def action_token_meter(self) -> None:
        view = self._view(self.current_turn)
        searches = [e for e in view.events if isinstance(e, SearchFinished)] if view else []
        answer_tokens = view.answer.completion_tokens if view and view.answer else 0
        self.app.push_screen(TokenScreen(self.last_context, searches, answer_tokens))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    @on(HistoryInput.HelpRequested)
    def _help_requested(self) -> None:
        self.action_help()

    # -- chats ------------------------------------------------------------------------------------------
    def action_export(self, dest: str | None = None) -> Path | None:
        """`/export [--drafts] [--force] [PATH]`: unverified drafts only when asked; an existing PATH only with --force."""
        dest, drafts, force = export_arguments(dest or "")
        try:
            path = self.conversation.export(Path(dest).expanduser() if dest else None, drafts=drafts, overwrite=force)
        except UsageError as exc:
            self.notify(f"{str(exc)[0].upper()}{str(exc)[1:]}.", severity="warning")
            return None
        except (OSError, AgentError) as exc:
            self.notify(f"Could not export: {exc}", severity="error")
            return None
        self.notify(f"Exported to {path}", title="Chat exported", timeout=8)
        return path

    async def _clear(self) -> None:
        await self.message_list.remove_children()
        self.current_turn = None
        self.last_context = None
        self.query_one(TokenBar).show(None)
        self.query_one(SourcesPanel).show(None, {}, None)

    async def action_new_chat(self) -> None:
        if self.busy:
            self.notify("Still answering: Esc cancels it first.", severity="warning")
            return
        self.conversation.new_chat()
        await self._clear()
        await self.message_list.mount(self._welcome())

    def action_chat_list(self) -> None:
        chats = display_copy(self.conversation.store.list_chats())
        self.app.push_screen(ChatListScreen(chats, self.conversation.chat_id), self._resume)

    async def _resume(self, chat_id: str | None) -> None:
        if chat_id is None or chat_id == self.conversation.chat_id:
            return
        if self.busy or self.session is None:
            self.notify("Wait for the answer (or the loading) to finish first.", severity="warning")
            return
        try:
            info, turns, folder_notice, noted = self.conversation.resume(chat_id)
        except (OSError, AgentError) as exc:
            self.notify(f"Could not open the chat: {exc}", severity="error")
            return
        await self._clear()
        for done, (turn_id, saved) in enumerate(turns):
            for line in (n for n in noted if n.after == done):  # a switch, between the turns it came between
                await self._note(display_copy(line.text))
            view = await self._add_turn(turn_id, saved.question)
            view.stale = stale_citations(saved.answer, saved.events, self.conversation.chunk)
            for event in display_copy(saved.complete_events):
                await view.apply(event, replay=True)
                self._after_event(view, event)
        for line in (n for n in noted if n.after >= len(turns)):
            await self._note(display_copy(line.text))
        if info.damaged_after is not None:
            self.notify(
                f"Damaged after turn {info.damaged_after} ({info.damage}): showing the turns before it. "
                "Asking a question continues from there; the damaged file is kept as a copy.",
                title="Damaged chat", severity="warning", timeout=12,
            )
        else:
            self.notify(f"Resumed “{info.title}”.")
        if folder_notice:  # never a silent switch to another folder
            self.notify(folder_notice, title="Another docs folder", severity="warning", timeout=12)
