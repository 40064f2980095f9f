"""A claim's structure against its passage: pairs kept in their order, negations, quantifiers, markup.

Each case is a pair: the claim with one thing altered is flagged, and the claim that keeps the passage's facts is
supported. The four kinds of alteration that passed the word-level checks: two things of the passage put the other
way round, a name or value (a key chord written in markup among them) changed, a negation flipped, a quantifier
widened. Passages and claims are written for these tests, not taken from the labelled sets.
"""

from __future__ import annotations

import pytest

from fakes import HashEmbedder
from rag.citations import Citation
from rag.types import Chunk
from rag.verification.claims import split_claims
from rag.verification.specifics import matchable, specifics
from rag.verification.verifier import verify_answer

EMBEDDERS = [None, HashEmbedder()]


def check(passage: str, claim: str, embedder=None):
    """The verdict on `claim [1]` with [1] = `passage`, as the agent's checker makes it."""
    chunk = Chunk("docs/p.md#0", "docs/p.md", "docs/p.md", passage)
    result = verify_answer(f"{claim} [1]", {1: Citation(1, chunk.chunk_id, chunk.doc_id, chunk.uri)},
                           {chunk.chunk_id: chunk}.get, embedder)  # fmt: skip
    (verdict,) = result.claims
    return verdict


# (passage, claim with the facts altered, a word the reason names, the claim that keeps the passage's facts)
SWAPPED = [
    pytest.param("Values given on the command line take precedence over values read from the configuration file.",
                 "Values read from the configuration file take precedence over values given on the command line.",
                 "over",
                 "Values given on the command line take precedence over values read from the configuration file.",
                 id="A over B"),
    pytest.param("At start-up the daemon reads /etc/foo.conf and then ~/.foorc, if it exists.",
                 "At start-up the daemon reads ~/.foorc and then /etc/foo.conf.", "/etc/foo.conf",
                 "At start-up the daemon reads /etc/foo.conf and then ~/.foorc.", id="A then B"),
    pytest.param("Shared pages are mapped into every worker and private pages are not.",
                 "Private pages are mapped into every worker and shared pages are not.", "privat",
                 "Shared pages are mapped into every worker, but private pages are not.", id="A is, B is not"),
    pytest.param("The hook runs after the commit is written, before the push starts.",
                 "The hook runs before the commit is written, after the push starts.", "after",
                 "The hook runs after the commit is written and before the push starts.", id="before and after"),
    pytest.param("The tool reads FOO_HOME and FOO_CACHE; the former sets the data directory, while the latter "
                 "sets the cache directory.",
                 "FOO_CACHE sets the data directory, while FOO_HOME sets the cache directory.", "data",
                 "FOO_HOME sets the data directory, while FOO_CACHE sets the cache directory.",
                 id="the former, the latter"),
    pytest.param("The upload job waits until the disk is mounted, and the backup job waits until the network is up.",
                 "The upload job waits until the network is up, and the backup job waits until the disk is mounted.",
                 "disk",
                 "The upload job waits until the disk is mounted, and the backup job waits until the network is up.",
                 id="A until X, B until Y"),
    pytest.param("The archive stores absolute paths. Extracting it makes them relative to the current directory.",
                 "The archive stores relative paths.", "absolute", "The archive stores absolute paths.",
                 id="an opposite the passage also uses elsewhere"),
]  # fmt: skip

CHANGED = [
    pytest.param("Press <kbd>Ctrl</kbd>+<kbd>Z</kbd> to suspend the editor.", "Press Ctrl+C to suspend the editor.",
                 "ctrl+z", "Press CTRL-Z to suspend the editor.", id="key chord in HTML markup"),
    pytest.param("Type ^D (control-D) on an empty line to end the input.", "Type ^C on an empty line to end the input.",
                 "ctrl+d", "Type Ctrl-D on an empty line to end the input.", id="caret chord"),
    pytest.param("Open the command palette with :kbd:`Ctrl-Shift-P`.", "Open the command palette with :kbd:`Ctrl-Shift-K`.",
                 "ctrl+shift+p", "Open the command palette with Ctrl+Shift+P.", id="reStructuredText kbd role"),
    pytest.param("Leave the search with :kbd:`Esc`.", "Leave the search with :kbd:`Ctrl+Q`.", "esc",
                 "Leave the search with `Esc`.", id="a key name in a kbd role"),
    pytest.param("The colour scheme defaults to light but can be changed in the settings.",
                 "The colour scheme defaults to dark.", "light", "The colour scheme defaults to light.",
                 id="a default value"),
]  # fmt: skip

NEGATED = [
    pytest.param("Files opened before the switch are unaffected by the new limit.",
                 "Files opened before the switch are also affected by the new limit.", "affect",
                 "Files opened before the switch are not affected by the new limit.", id="unaffected"),
    pytest.param("A changed setting does not take effect until the next restart of the service.",
                 "A changed setting takes effect at once, in the same run of the service.", "take",
                 "A changed setting does not take effect until the next restart.", id="not until the next"),
    pytest.param("By default, up to 500 entries are kept in the journal.",
                 "By default, entries are not kept in the journal.", "kept",
                 "By default, up to 500 entries are kept in the journal.", id="kept"),
    pytest.param("The command does not create or update the index or remove the lock file.",
                 "The command removes the lock file when it is done.", "remov",
                 "The command does not remove the lock file.", id="a negation reaching along 'or'"),
    pytest.param("While text is being pasted, key bindings are not processed.",
                 "While text is being pasted, key bindings are still processed.", "process",
                 "While text is being pasted, key bindings are not processed.", id="not -> still"),
]  # fmt: skip

WIDENED = [
    pytest.param("Every request whose path starts with /api is forwarded to the backend.",
                 "Every request is forwarded to the backend, whether or not its path starts with /api.",
                 "whether or not", "Requests whose path starts with /api are forwarded to the backend.",
                 id="whether or not against a condition"),
    pytest.param("The job fails if both the token and the password are missing.",
                 "The job fails if either the token or the password is missing.", "either",
                 "The job fails if both the token and the password are missing.", id="either against both"),
    pytest.param("The cache is only read on the first run of the tool.",
                 "The cache is read on every run of the tool, not only the first.", "only",
                 "The cache is only read on the first run.", id="every, not only"),
]  # fmt: skip

CASES = SWAPPED + CHANGED + NEGATED + WIDENED


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("passage, altered, named, faithful", CASES)
def test_the_altered_claim_is_unsupported_and_the_faithful_one_supported(passage, altered, named, faithful, embedder):
    verdict = check(passage, altered, embedder)
    assert verdict.verdict == "unsupported", verdict
    assert named in verdict.reason.lower(), verdict.reason
    kept = check(passage, faithful, embedder)
    assert kept.verdict == "supported", kept


@pytest.mark.real
@pytest.mark.parametrize("passage, altered, named, faithful", CASES)
def test_with_minilm_too(passage, altered, named, faithful, real_embedder):
    assert check(passage, altered, real_embedder).verdict == "unsupported"
    assert check(passage, faithful, real_embedder).verdict == "supported"


# (passage, claim saying more than it, what the reason names, the claim without the addition)
UNSTATED = [
    pytest.param("The tool exits when the input file is missing.", "The tool warns and exits when the input file is missing.",
                 "warn", "The tool exits when the input file is missing.", id="an effect: a warning"),
    pytest.param("When the journal is full, entries are dropped.", "When the journal is full, the oldest entries are dropped.",
                 "oldest", "When the journal is full, entries are dropped.", id="a superlative"),
    pytest.param("A template can extend another template.", "A template can extend at most one other template.",
                 "1", "A template can extend another template.", id="at most one"),
    pytest.param("Idle sessions are closed after a timeout.", "Idle sessions are closed after one hour.",
                 "1", "Idle sessions are closed after a timeout.", id="one hour"),
]  # fmt: skip


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("passage, claim, named, plain_claim", UNSTATED)
def test_what_the_passage_does_not_say_is_not_supported(passage, claim, named, plain_claim, embedder):
    verdict = check(passage, claim, embedder)
    assert verdict.verdict != "supported" and named in verdict.reason, verdict
    assert check(passage, plain_claim, embedder).verdict == "supported"


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_name_in_the_chunks_first_line_is_stated_for_all_of_it(embedder):
    passage = "-E\n\nRebuild the environment from scratch instead of reusing the saved one."
    claim = "-E rebuilds the environment from scratch instead of reusing the saved one."
    assert check(passage, claim, embedder).verdict == "supported"
    verdict = check(passage, claim.replace("-E", "-a"), embedder)
    assert verdict.verdict != "supported" and "-a" in verdict.reason


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_restructuredtext_roles_are_code_spans_and_split_nothing(embedder):
    passage = "The value is cached as :variable:`FOO_DIR` after the first run, and ``FOO_TMP`` is never cached."
    assert check(passage, "The value is cached as FOO_DIR after the first run.", embedder).verdict == "supported"
    verdict = check(passage, "The value is cached as `FOO_TMP` after the first run.", embedder)
    assert verdict.verdict == "unsupported"


def test_key_chords_are_one_spelling_whatever_the_markup():
    for text in ("CTRL-Z", "Ctrl+Z", "control-Z", "^Z", "C-z", "<C-z>", "<kbd>Ctrl</kbd>+<kbd>Z</kbd>", ":kbd:`Ctrl-Z`"):
        assert "ctrl+z" in matchable(text), text
    assert [(s.text, s.kind) for s in specifics("Detach with ‘C-b d’, rename with M-r.")][-1] == ("alt+r", "key")
    assert not [s for s in specifics("Use -C or the C library.") if s.kind == "key"]


def test_a_period_inside_a_path_ends_no_sentence():
    text = "tmux reads /etc/tmux.conf, then ~/.tmux.conf. It works.Then it stops."
    assert [c.text for c in split_claims(text)] == [
        "tmux reads /etc/tmux.conf, then ~/.tmux.conf.", "It works.", "Then it stops.",
    ]  # fmt: skip
