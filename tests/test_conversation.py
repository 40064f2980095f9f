"""The TUI's conversation without its screen: which docs a chat was saved over, and resuming it."""

from __future__ import annotations

from agent.chats import ChatStore
from agent.surfaces.tui.conversation import Conversation
from tui_support import real_session

# What a --store session names as its docs (ChatSession.docs_dir): the store's URL, password hidden.
STORE_URL = "postgresql://smol@127.0.0.1:5432/docs"


def _saved_chat(store: ChatStore, docs_dir) -> str:
    """One answered turn saved the way the chat screen saves it; returns the chat id."""
    session, _, _ = real_session(["The kv cache stores keys and values [1]."])
    session.docs_dir = docs_dir
    conversation = Conversation(store)
    conversation.session = session
    _, log, cancel = conversation.begin()
    for event in session.ask("what does the kv cache store", cancel):
        log.record(event)
    log.close()
    assert conversation.chat_id is not None
    return conversation.chat_id


def test_a_chat_saved_over_a_store_resumes_over_it_without_a_folder_notice(tmp_path):
    """A store session's docs_dir is its URL, not a Path: resuming compared it as a folder and raised."""
    store = ChatStore(tmp_path / "chats")
    chat_id = _saved_chat(store, STORE_URL)
    session, _, _ = real_session(["It is about 90 MB [1]."])
    session.docs_dir = STORE_URL
    conversation = Conversation(store)
    conversation.session = session
    info, turns, notice, _ = conversation.resume(chat_id)
    assert notice is None
    assert [saved.question for _, saved in turns] == ["what does the kv cache store"]


def test_a_chat_saved_over_a_folder_resumed_over_a_store_names_both(tmp_path):
    store = ChatStore(tmp_path / "chats")
    docs = tmp_path / "docs"
    docs.mkdir()
    chat_id = _saved_chat(store, docs)
    session, _, _ = real_session()
    session.docs_dir = STORE_URL
    conversation = Conversation(store)
    conversation.session = session
    _, _, notice, _ = conversation.resume(chat_id)
    assert notice is not None and f"saved over {docs}" in notice and STORE_URL in notice
