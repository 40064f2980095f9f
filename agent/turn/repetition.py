"""Stops a generation that has started repeating itself, a failure mode of very small models."""

from __future__ import annotations


class RepetitionGuard:
    """Feed it the text as it streams; `looping` turns true once the tail repeats earlier text.

    A tail of `window` characters that already appeared at least `repeats` times before means the model is
    going round in circles ("the prefix of the prefix of ..."); stopping there saves the rest of the budget.
    """

    def __init__(self, window: int = 48, repeats: int = 2, min_length: int = 160) -> None:
        self.window = window
        self.repeats = repeats
        self.min_length = min_length
        self.text = ""

    def feed(self, delta: str) -> bool:
        self.text += delta
        return self.looping

    @property
    def looping(self) -> bool:
        if len(self.text) < max(self.min_length, self.window * (self.repeats + 1)):
            return False
        tail = self.text[-self.window :]
        return self.text.count(tail, 0, len(self.text) - self.window) >= self.repeats
