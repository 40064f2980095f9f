"""A tokenizer of one token per whitespace-separated word, so the fuzz benchmarks chunk without loading a model.

The tests use it too (tests/fakes.py): one definition for both.
"""

from __future__ import annotations

import re
from typing import Sequence

from models.protocols import Message

_WORD = re.compile(r"\S+")


class WordTokenizer:
    """One token per whitespace-separated word; chat rendered as ChatML."""

    name = "words"

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._words: list[str] = []

    def count(self, text: str) -> int:
        return len(_WORD.findall(text))

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in _WORD.findall(text):
            if word not in self._ids:
                self._ids[word] = len(self._words)
                self._words.append(word)
            ids.append(self._ids[word])
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self._words[i] for i in ids)

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
        if add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)

    def count_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> int:
        return self.count(self.render_chat(messages, add_generation_prompt))
