"""Applying a TextGuard while llama.cpp samples: masks of refused pieces, computed once per guard state."""

from __future__ import annotations

import weakref
from typing import Hashable, Sequence

import numpy as np

from models.protocols import TextGuard


class Vocabulary:
    """The text of every token id (control tokens as "") and lookups over it, built once per model: a scan of
    49k pieces takes tens of milliseconds, a decoded token ~17."""

    def __init__(self, pieces: Sequence[str]) -> None:
        self.pieces = list(pieces)
        self._containing: dict[str, np.ndarray] = {}
        self._by_first: dict[str, list[int]] = {}
        for i, piece in enumerate(self.pieces):
            self._by_first.setdefault(piece[:1], []).append(i)

    def __len__(self) -> int:
        return len(self.pieces)

    def containing(self, chars: str) -> np.ndarray:
        """Ids of the pieces containing any of `chars`."""
        if chars not in self._containing:
            self._containing[chars] = np.array(
                [i for i, piece in enumerate(self.pieces) if any(ch in piece for ch in chars)], dtype=np.intp
            )
        return self._containing[chars]

    def starting_with(self, chars: str) -> list[int]:
        """Ids of the empty (control) pieces and of the pieces whose first character is in `chars`."""
        return [i for ch in {"", *chars} for i in self._by_first.get(ch, ())]


_VOCABULARIES: "weakref.WeakKeyDictionary[object, Vocabulary]" = weakref.WeakKeyDictionary()


def vocabulary(llm) -> Vocabulary:
    """The Vocabulary of a loaded llama_cpp.Llama, computed on first use."""
    vocab = _VOCABULARIES.get(llm)
    if vocab is None:
        import llama_cpp

        handle = llm._model.vocab
        vocab = _VOCABULARIES[llm] = Vocabulary(
            "" if llama_cpp.llama_vocab_is_control(handle, token)
            else llm.detokenize([token]).decode("utf-8", errors="replace")
            for token in range(llm.n_vocab())
        )  # fmt: skip
    return vocab


class GuardProcessor:
    """A llama-cpp-python logits processor that sets the logits of pieces `guard` refuses to -inf.

    It follows the generated text itself: each call first appends the piece of the token sampled last.
    """

    def __init__(self, guard: TextGuard, vocab: Vocabulary, n_prompt: int) -> None:
        self.guard = guard
        self.vocab = vocab
        self.text = ""
        self._seen = n_prompt
        self._masks: dict[Hashable, np.ndarray] = {}
        self._watched = vocab.containing(guard.watch)

    def refused(self, state: Hashable) -> np.ndarray:
        """Token ids refused in `state`, cached."""
        mask = self._masks.get(state)
        if mask is None:
            allows, pieces = self.guard.allows, self.vocab.pieces
            if self.guard.settled(state):
                mask = np.array([i for i in self._watched if not allows(state, pieces[i])], dtype=np.intp)
            else:
                starts = self.guard.starts(state)
                ids = range(len(pieces)) if starts is None else self.vocab.starting_with(starts)
                kept = [i for i in ids if not pieces[i] or allows(state, pieces[i])]  # control tokens stay
                mask = np.setdiff1d(np.arange(len(pieces)), np.array(kept, dtype=np.intp))
            self._masks[state] = mask
        return mask

    def __call__(self, input_ids, logits: np.ndarray) -> np.ndarray:
        pieces = self.vocab.pieces
        for token in input_ids[self._seen :]:
            self.text += pieces[int(token)] if int(token) < len(pieces) else ""
        self._seen = max(self._seen, len(input_ids))
        refused = self.refused(self.guard.state(self.text))
        if len(refused) and len(refused) < len(logits):
            logits[refused] = -np.inf
        return logits
