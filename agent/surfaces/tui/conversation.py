"""The conversation behind the chat screen: the session, the saved chat, turn numbers, the cancel token.

No Textual here: the screen shows what this holds and asks it to change.
"""

from __future__ import annotations

from pathlib import Path

from agent.chats import ChatInfo, ChatLog, ChatStore, SavedNote, SavedTurn, UnsavedLog
from agent.errors import AgentError, UsageError
from agent.session import Session
from models.protocols import CancelToken
from rag.printable import one_line
from rag.types import Chunk


class Conversation:
    def __init__(self, store: ChatStore) -> None:
        self.store = store
        self.session: Session | None = None  # once loaded
        self.log: ChatLog | UnsavedLog | None = None  # opened by the first question
        self.cancel: CancelToken | None = None  # set while a turn runs
        self._next_turn = 0
        self._notes: list[str] = []  # noted before the chat's file exists: written when its first question opens it

    @property
    def busy(self) -> bool:
        return self.cancel is not None

    @property
    def chat_id(self) -> str | None:
        return self.log.chat_id if self.log is not None else None

    @property
    def unsaved(self) -> str | None:
        """Why this chat is not being saved, once its file could not be created; else None."""
        return self.log.reason if isinstance(self.log, UnsavedLog) else None

    def begin(self) -> tuple[int, ChatLog | UnsavedLog, CancelToken]:
        """Number a new turn, open the chat file on the first question, arm a cancel token.

        A chat file that cannot be created leaves the chat going on unsaved: the answer matters more than the file.
        """
        if self.log is None:
            session = self._loaded()
            docs = session.docs_dir
            try:
                self.log = self.store.create(docs_dir=str(docs) if docs else None, model=session.model_name)
            except OSError as exc:
                where = f" ({exc.filename})" if exc.filename else ""
                self.log = UnsavedLog(f"{exc.strerror or exc}{where}")
            for text in self._notes:
                self._write_note(text)
            self._notes = []
        self.cancel = CancelToken()
        return self._number(), self.log, self.cancel

    def note(self, text: str) -> None:
        """Keep a line the chat notes (a switch of folder or model) with the chat, so a resumed chat shows it where
        it happened: written now, or with the first question when the chat has no file yet."""
        if self.log is None:
            self._notes.append(text)
        else:
            self._write_note(text)

    def _write_note(self, text: str) -> None:
        if self.log is None:
            return
        try:
            self.log.note(text)
        except OSError:  # the chat goes on; its file lacks this line (a full disk fails the next turn's write too)
            pass

    def _loaded(self) -> Session:
        """The session; the screen asks nothing of a conversation before its model and index are loaded."""
        if self.session is None:
            raise UsageError("still loading: wait for the model and the index to be ready")
        return self.session

    def end(self) -> None:
        self.cancel = None

    def stop(self) -> bool:
        """Cancel the running turn; False when there is none (or it is already cancelled)."""
        if self.cancel is None or self.cancel.cancelled:
            return False
        self.cancel.cancel()
        return True

    def chunk(self, chunk_id: str | None) -> Chunk | None:
        """The stored chunk, or None (a lookup failure shows the excerpt the model saw instead)."""
        if not chunk_id or self.session is None:
            return None
        try:
            return self.session.chunk(chunk_id)
        except Exception:
            return None

    def export(self, dest: Path | None = None, drafts: bool = False, overwrite: bool = False) -> Path:
        """Export the chat; never into the docs folder being chatted over (it would be indexed as a document)."""
        if self.log is None:
            raise UsageError("nothing to export yet: ask a question first")
        if isinstance(self.log, UnsavedLog):
            raise UsageError(f"this chat is not saved ({self.log.reason}): there is no file to export")
        docs = self.session.docs_dir if self.session is not None else None
        if dest is not None and isinstance(docs, Path) and _inside(dest, docs):
            raise UsageError(f"{dest} is inside the docs folder being chatted over ({docs}): export somewhere else")
        return self.store.export(self.log.chat_id, dest, lookup=self.chunk, drafts=drafts, overwrite=overwrite)

    def new_chat(self) -> None:
        if self.session is not None:
            self.session.new_chat()
        self._close_log()
        self._notes = []

    def resume(self, chat_id: str) -> tuple[ChatInfo, list[tuple[int, SavedTurn]], str | None, list[SavedNote]]:
        """Load a saved chat into the session; later questions append to its file. Returns its info, its turns,
        a notice when it was saved over another docs folder than this session searches (else None), and the
        lines it noted between turns (switches), each with how many turns came before it."""
        from agent.session import Turn

        session = self._loaded()
        chat = self.store.load(chat_id)
        session.restore([Turn(t.question, t.answer) for t in chat.turns])
        self._close_log()
        self._notes = []
        self.log = self.store.reopen(chat_id)
        notice = folder_change(chat.meta.get("docs_dir"), session.docs_dir)
        return chat.info, [(self._number(), turn) for turn in chat.turns], notice, chat.notes

    def turns_so_far(self) -> tuple:
        """The chat's questions and answers as saved, for a session that takes over (a switch); () when unsaved."""
        from agent.session import Turn

        chat_id = self.chat_id
        if chat_id is None or self.unsaved:
            return ()
        try:
            return tuple(Turn(t.question, t.answer) for t in self.store.load(chat_id).turns)
        except (OSError, AgentError):
            return ()

    def close(self) -> None:
        """On quit: stop the turn; a running turn's worker still owns the log until it ends."""
        self.stop()
        if not self.busy:
            self._close_log()

    def _number(self) -> int:
        self._next_turn += 1
        return self._next_turn - 1

    def _close_log(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None


def _inside(path: Path, folder: Path) -> bool:
    """True when `path` is `folder` or under it, links resolved (the file need not exist yet)."""
    return Path(path).expanduser().resolve().is_relative_to(Path(folder).expanduser().resolve())


def folder_change(saved: str | None, current: Path | str | None) -> str | None:
    """What to tell a user whose resumed chat was saved over another docs folder than the one searched now.
    A `current` str is a PostgreSQL store's URL: the same store is the same text."""
    if not saved or current is None:
        return None
    if saved == current if isinstance(current, str) else _same_folder(Path(saved), current):
        return None
    now = one_line(str(current))
    if not Path(saved).is_dir():
        return f"This chat was saved over {one_line(saved)}, which no longer exists: its next questions search {now}."
    return (f"This chat was saved over {one_line(saved)}: its next questions search {now}; "
            f"start smoldocs with --docs {one_line(saved)} to continue over that folder.")


def _same_folder(a: Path, b: Path) -> bool:
    return a.expanduser().resolve() == b.expanduser().resolve()
