"""MarkerGuard: which pieces may follow the text so far, and the logits processor that applies it."""

from __future__ import annotations

import numpy as np
import pytest

from agent.turn.grammars import MarkerGuard
from models.llama_cpp.guards import GuardProcessor, Vocabulary
from rag import markers

GUARD = MarkerGuard([1, 2, 12])


@pytest.mark.parametrize(
    "text, piece, ok",
    [
        ("The cache", " keeps", True),
        ("The cache", " [", True),
        ("The cache", " [1]", True),
        ("The cache", " [1, 2].", True),
        ("The cache", " [7]", False),
        ("The cache", " [3", False),  # no shown number starts with 3
        ("The cache", "]", False),  # a stray closing bracket
        ("The cache [", "1", True),
        ("The cache [", "7", False),
        ("The cache [", "x", False),
        ("The cache [1", "2", True),  # [12] is shown
        ("The cache [1", "3", False),
        ("The cache [1", "]", True),
        ("The cache [1", ",", True),
        ("The cache [1,", " 2]", True),
        ("The cache [1,", " 7]", False),
        ("The cache [1, ", "]", False),  # a marker cannot end on a comma
        ("The cache [", "]", False),  # nor be empty
        ("The cache [1", "[", False),  # no nesting
        ("See [1] and", " [2] too", True),
        ("See [1] and", " [2] [5]", False),
        ("The cache [1", "] then [7]", False),
    ],
)
def test_marker_guard_allows_only_markers_of_shown_numbers(text, piece, ok):
    assert GUARD.allows(GUARD.state(text), piece) is ok


def test_state_is_the_open_marker_or_none():
    assert GUARD.state("plain text") is None
    assert GUARD.state("see [1] done") is None
    assert GUARD.state("see [1, ") == "1, "
    assert GUARD.settled(None) and not GUARD.settled("1")


def _sample_greedy(processor, logits_by_step, n_prompt=3):
    """Drive the processor like llama-cpp-python: ids so far (prompt + sampled), full-vocabulary logits."""
    ids = list(range(n_prompt))
    for logits in logits_by_step:
        out = processor(np.array(ids), np.array(logits, dtype=np.float32))
        ids.append(int(np.argmax(out)))
    return ids[n_prompt:]


def test_processor_refuses_made_up_markers_the_model_prefers():
    pieces = ["", " The", " cache", " [", "7", "1", "]", "."]  # id 0 is a control token
    processor = GuardProcessor(MarkerGuard([1, 2]), Vocabulary(pieces), n_prompt=3)
    # The model prefers "[" then "7" then "]": the guard turns "7" into the best allowed piece, "1".
    steps = [
        [0, 5, 1, 1, 0, 0, 0, 0],  # " The"
        [0, 1, 5, 1, 0, 0, 0, 0],  # " cache"
        [0, 1, 1, 5, 0, 0, 0, 0],  # " ["
        [0, 0, 0, 0, 9, 3, 1, 0],  # "7" refused -> "1"
        [0, 0, 0, 0, 0, 0, 5, 1],  # "]"
        [0, 0, 0, 0, 0, 0, 0, 5],  # "."
    ]
    text = "".join(pieces[i] for i in _sample_greedy(processor, steps))
    assert text == " The cache [1]." and [m.n for m in markers.find(text)] == [1]


class Counting(MarkerGuard):
    """A MarkerGuard that records every piece it is asked about."""

    def __init__(self, numbers):
        super().__init__(numbers)
        self.calls = []

    def allows(self, state, piece):
        self.calls.append(piece)
        return super().allows(state, piece)


def test_processor_only_checks_watched_pieces_when_settled():
    pieces = ["", "a", "b", " [", "1", "]"]
    guard = Counting([1])
    processor = GuardProcessor(guard, Vocabulary(pieces), n_prompt=0)
    processor(np.array([], dtype=np.intc), np.zeros(len(pieces), dtype=np.float32))
    processor(np.array([1], dtype=np.intc), np.zeros(len(pieces), dtype=np.float32))  # same state: cached
    assert sorted(guard.calls) == sorted([" [", "]"])


def test_inside_a_marker_only_pieces_that_can_continue_it_are_checked():
    pieces = ["", "a", " b", " [", "1", "]", "7", "1]", ",", " 2"]
    guard = Counting([1, 2])
    processor = GuardProcessor(guard, Vocabulary(pieces), n_prompt=0)
    out = processor(np.array([3], dtype=np.intc), np.zeros(len(pieces), dtype=np.float32))  # after " ["
    assert sorted(guard.calls) == sorted(["1", "]", "7", "1]"])  # "a", " b", " [", ",", " 2" refused unseen
    assert [i for i, v in enumerate(out) if v == 0] == [0, 4, 7]  # control, "1", "1]"
    guard.calls.clear()
    out = processor(np.array([3, 4, 8], dtype=np.intc), np.zeros(len(pieces), dtype=np.float32))  # after " [1,"
    assert sorted(guard.calls) == sorted(["1", "]", "7", "1]", " b", " [", " 2"])  # a space may follow the comma
    assert [i for i, v in enumerate(out) if v == 0] == [0, 4, 7, 9]  # control, "1", "1]" ([1,1]), " 2"
