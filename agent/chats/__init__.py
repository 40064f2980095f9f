"""Saved chats: what one is (saved), the event codec (codec), the transcript files (store), stale sources (stale),
exports (export)."""

from agent.chats.codec import answer_from_dict, answer_to_dict, event_from_dict, event_to_dict
from agent.chats.stale import stale_citations
from agent.chats.saved import ChatInfo, SavedChat, SavedNote, SavedTurn
from agent.chats.store import ChatLog, ChatStore, ChatStoreError, UnsavedLog

__all__ = [
    "ChatInfo", "ChatLog", "ChatStore", "ChatStoreError", "SavedChat", "SavedNote", "SavedTurn", "UnsavedLog",
    "answer_from_dict", "answer_to_dict", "event_from_dict", "event_to_dict", "stale_citations",
]
