"""rag.types' index protocols: reading and lifecycle apart, and every backend defines all of both itself."""

from __future__ import annotations

import pytest

from rag.indexing.build import IndexUpdate
from rag.indexing.hybrid import HybridIndex
from rag.indexing.live import LiveIndex
from rag.postgres.search import PgIndex
from rag.types import IndexDefaults, IndexLifecycle, IndexReader, Retriever, Update


def members(protocol: type) -> set[str]:
    """The names a protocol declares (its own and its bases'), as a caller may use them."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass in (object,) or not getattr(klass, "_is_protocol", False) or klass.__name__ == "Protocol":
            continue
        names |= {n for n in vars(klass) if not n.startswith("_") or n == "__len__"}
    return names


def test_reading_and_lifecycle_split_the_retriever_between_them():
    reading, lifecycle = members(IndexReader), members(IndexLifecycle)
    assert reading & lifecycle == set()
    assert reading | lifecycle == members(Retriever)
    assert {"search", "chunk", "source", "vocabulary"} <= reading
    assert lifecycle == {"snapshot", "hold", "close", "update"}


@pytest.mark.parametrize("backend", [HybridIndex, PgIndex, LiveIndex])
def test_every_backend_defines_every_member_itself(backend):
    """On the class or assigned in its __init__, never reached through __getattr__ (LiveIndex forwards what it does
    not define): a member the protocol gains must be written in each backend, where a reader finds it."""
    assigned = set(backend.__init__.__code__.co_names)
    assert sorted(n for n in members(Retriever) if not hasattr(backend, n) and n not in assigned) == []


def test_index_update_is_an_update_and_an_index_made_in_memory_has_none():
    assert sorted(n for n in members(Update) if not hasattr(IndexUpdate, n)) == []
    assert IndexDefaults.update is None
