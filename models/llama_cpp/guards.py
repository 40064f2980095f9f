"""Applying a TextGuard while llama.cpp samples: masks of refused pieces, computed once per guard state."""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from pathlib import Path
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
        self._by_text: dict[str, list[int]] = {}
        for i, piece in enumerate(self.pieces):
            self._by_first.setdefault(piece[:1], []).append(i)
            if piece:
                self._by_text.setdefault(piece, []).append(i)
        self.longest = max((len(p) for p in self.pieces), default=0)
        self.control = np.array(self._by_first.get("", []), dtype=np.intp)

    def __len__(self) -> int:
        return len(self.pieces)

    def containing(self, chars: str) -> np.ndarray:
        """Ids of the pieces containing any of `chars`."""
        if chars not in self._containing:
            self._containing[chars] = np.array(
                [i for i, piece in enumerate(self.pieces) if any(ch in piece for ch in chars)], dtype=np.intp
            )
        return self._containing[chars]

    def prefixes_of(self, text: str) -> list[int]:
        """Ids of the pieces that spell a non-empty prefix of `text`: a few dict lookups, not a vocabulary scan."""
        return [i for n in range(1, min(len(text), self.longest) + 1) for i in self._by_text.get(text[:n], ())]

    def starting_with(self, chars: str) -> list[int]:
        """Ids of the empty (control) pieces and of the pieces whose first character is in `chars`."""
        return [i for ch in {"", *chars} for i in self._by_first.get(ch, ())]


_VOCABULARIES: "weakref.WeakKeyDictionary[object, Vocabulary]" = weakref.WeakKeyDictionary()


def vocabulary(llm) -> Vocabulary:
    """The Vocabulary of a loaded llama_cpp.Llama: on first use read from the cache, or computed (~1 s) and saved."""
    vocab = _VOCABULARIES.get(llm)
    if vocab is None:
        vocab = _VOCABULARIES[llm] = Vocabulary(_pieces(llm))
    return vocab


def _pieces(llm) -> list[str]:
    import llama_cpp

    from models.paths import cache_dir

    stat = Path(llm.model_path).stat()
    key = hashlib.sha256(f"{Path(llm.model_path).resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0"
                         f"{llama_cpp.__version__}".encode()).hexdigest()[:32]
    path = cache_dir() / "vocab" / f"{key}.json"
    try:
        pieces = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(pieces, list) and len(pieces) == llm.n_vocab():
            return pieces
    except (OSError, ValueError):
        pass
    handle = llm._model.vocab
    pieces = [
        "" if llama_cpp.llama_vocab_is_control(handle, token)
        else llm.detokenize([token]).decode("utf-8", errors="replace")
        for token in range(llm.n_vocab())
    ]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(pieces), encoding="utf-8")
        os.replace(tmp, path)  # never a half-written file
    except OSError:
        pass  # a read-only cache only costs the next process this second
    return pieces


class GuardProcessor:
    """A llama-cpp-python logits processor that sets the logits of pieces `guard` refuses to -inf.

    It follows the generated text itself: each call first appends the piece of the token sampled last. A guard's
    `only(state, vocab)` may name the allowed ids outright in some states (None: check every piece with `allows`).
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
        state = self.guard.state(self.text)
        allowed = self.guard.only(state, self.vocab)
        if allowed is not None:
            kept = logits[allowed]
            logits[:] = -np.inf
            logits[allowed] = kept
            return logits
        refused = self.refused(state)
        if len(refused) and len(refused) < len(logits):
            logits[refused] = -np.inf
        return logits
