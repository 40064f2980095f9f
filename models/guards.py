"""Applying a TextGuard while llama.cpp samples: masks of refused pieces, computed once per guard state."""

from __future__ import annotations

import weakref
from typing import Hashable, Sequence

import numpy as np

from models.protocols import TextGuard

_PIECES: "weakref.WeakKeyDictionary[object, list[str]]" = weakref.WeakKeyDictionary()


def vocabulary_pieces(llm) -> list[str]:
    """The text of every token id of `llm`'s vocabulary (control tokens as ""), computed once per model."""
    pieces = _PIECES.get(llm)
    if pieces is None:
        vocab = llm._model.vocab
        import llama_cpp

        pieces = []
        for token in range(llm.n_vocab()):
            if llama_cpp.llama_vocab_is_control(vocab, token):
                pieces.append("")
                continue
            pieces.append(llm.detokenize([token]).decode("utf-8", errors="replace"))
        _PIECES[llm] = pieces
    return pieces


class _Index:
    """Lookups over one vocabulary, built once (a scan of 49k pieces takes tens of ms, a token ~17 ms)."""

    def __init__(self, pieces: Sequence[str]) -> None:
        self.pieces = pieces
        self.watched: dict[str, np.ndarray] = {}
        self.by_first: dict[str, list[int]] = {}
        for i, piece in enumerate(pieces):
            self.by_first.setdefault(piece[:1], []).append(i)

    def containing(self, chars: str) -> np.ndarray:
        if chars not in self.watched:
            self.watched[chars] = np.array(
                [i for i, piece in enumerate(self.pieces) if any(ch in piece for ch in chars)], dtype=np.intp
            )
        return self.watched[chars]

    def starting_with(self, chars: str) -> list[int]:
        """Ids of the empty (control) pieces and of the pieces whose first character is in `chars`."""
        return [i for ch in {"", *chars} for i in self.by_first.get(ch, ())]


_INDEXES: dict[int, _Index] = {}


def _index(pieces: Sequence[str]) -> _Index:
    index = _INDEXES.get(id(pieces))
    if index is None or index.pieces is not pieces:
        index = _INDEXES[id(pieces)] = _Index(pieces)
    return index


class GuardProcessor:
    """A llama-cpp-python logits processor that sets the logits of pieces `guard` refuses to -inf.

    It follows the generated text itself: each call first appends the piece of the token sampled last.
    """

    def __init__(self, guard: TextGuard, pieces: Sequence[str], n_prompt: int) -> None:
        self.guard = guard
        self.pieces = pieces
        self.n_prompt = n_prompt
        self.text = ""
        self._seen = n_prompt
        self._masks: dict[Hashable, np.ndarray] = {}
        self._index = _index(pieces)
        self._watched = self._index.containing(guard.watch)

    def refused(self, state: Hashable) -> np.ndarray:
        """Token ids refused in `state`, cached."""
        mask = self._masks.get(state)
        if mask is None:
            allows, pieces = self.guard.allows, self.pieces
            if self.guard.settled(state):
                mask = np.array([i for i in self._watched if not allows(state, pieces[i])], dtype=np.intp)
            else:
                starts = self.guard.starts(state)
                ids = range(len(pieces)) if starts is None else self._index.starting_with(starts)
                kept = [i for i in ids if not pieces[i] or allows(state, pieces[i])]  # control tokens stay
                mask = np.setdiff1d(np.arange(len(pieces)), np.array(kept, dtype=np.intp))
            self._masks[state] = mask
        return mask

    def __call__(self, input_ids, logits: np.ndarray) -> np.ndarray:
        ids = input_ids if len(input_ids) else ()
        for token in ids[self._seen :]:
            self.text += self.pieces[int(token)] if int(token) < len(self.pieces) else ""
        self._seen = max(self._seen, len(ids))
        refused = self.refused(self.guard.state(self.text))
        if len(refused) and len(refused) < len(logits):
            logits[refused] = -np.inf
        return logits
