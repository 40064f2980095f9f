"""Exact names, numbers and quantifiers: what the cited text contradicts, each kind on its own, and bad input."""

from __future__ import annotations

import pytest

from fakes import HashEmbedder
from rag.citations import Citation
from rag.types import Chunk
from rag.verification.verifier import verify_answer

EMBEDDERS = [None, HashEmbedder()]


def check(passage: str, claim: str, embedder=None, n: int = 1):
    """The verdict on `claim [1]` with [1] = `passage`, as the agent's checker makes it."""
    chunk = Chunk("docs/p.md#0", "docs/p.md", "docs/p.md", passage)
    result = verify_answer(f"{claim} [{n}]", {1: Citation(1, chunk.chunk_id, chunk.doc_id, chunk.uri)},
                           {chunk.chunk_id: chunk}.get, embedder)  # fmt: skip
    (verdict,) = result.claims
    return verdict


# (passage, claim that swaps one exact thing for another of its kind, what the passage says, what the claim says)
SWAPS = [
    pytest.param("`'SIGINT'` from the terminal can usually be generated with <kbd>Ctrl</kbd>+<kbd>C</kbd>.",
                 "`'SIGTSTP'` from the terminal can usually be generated with <kbd>Ctrl</kbd>+<kbd>C</kbd>.",
                 "sigint", "sigtstp", id="signal"),
    pytest.param("Connections may be forwarded from remote hosts using the -A option to ssh(1).",
                 "Connections may be forwarded from remote hosts using the -X option to ssh(1).",
                 "-a", "-x", id="short option"),
    pytest.param('"git stash" learned the "--staged" option to stash away what has been added to the index.',
                 '"git stash" learned the "--keep-index" option to stash away what has been added to the index.',
                 "--staged", "--keep-index", id="long option"),
    pytest.param("The `'beforeExit'` event is not emitted when `process.exit()` is called.",
                 "The `'exit'` event is not emitted when `process.exit()` is called.",
                 "'beforeexit'", "'exit'", id="event"),
    pytest.param("Subsequent calls to `write()` result in an `ERR_STREAM_DESTROYED` error.",
                 "Subsequent calls to `write()` result in an `ERR_STREAM_WRITE_AFTER_END` error.",
                 "err_stream_destroyed", "err_stream_write_after_end", id="constant"),
    pytest.param("The command name must be listed in /etc/shells, unless the invoker is the superuser.",
                 "The command name must be listed in /etc/login.defs, unless the invoker is the superuser.",
                 "/etc/shells", "/etc/login.defs", id="path"),
    pytest.param("The default age can be overridden by the config variable `gc.pruneExpire`.",
                 "The default age can be overridden by the config variable `gc.reflogExpire`.",
                 "gc.pruneexpire", "gc.reflogexpire", id="config key"),
    pytest.param("Supplying `--aggressive` tweaks the options passed to linkgit:git-repack[1].",
                 "Supplying `--aggressive` tweaks the options passed to git-pack-refs(1).",
                 "git-repack(1)", "git-pack-refs(1)", id="man page"),
    pytest.param("If this value is not a positive number, a `RangeError` is thrown.",
                 "If this value is not a positive number, a `TypeError` is thrown.",
                 "rangeerror", "typeerror", id="name"),
    pytest.param("The 'ours' strategy keeps the tree of the current branch head.",
                 "The 'theirs' strategy keeps the tree of the current branch head.",
                 "ours", "theirs", id="quoted name"),
    pytest.param("Packages must depend on python3 (>= 3.5) to run this program.",
                 "Packages must depend on python3 (>= 3.6) to run this program.",
                 "3.5", "3.6", id="version"),
    pytest.param("The default is 600 seconds, and the timer is reset on each access.",
                 "The default is 300 seconds, and the timer is reset on each access.",
                 "600", "300", id="number"),
    pytest.param("The latest stash is `stash@{0}`, and `stash@{1}` is the one before it.",
                 "The latest stash is `stash@{1}`.",
                 "stash@{0}", "stash@{1}", id="number inside an identifier"),
    pytest.param("e.g. `stash@{0}` is the most recently created stash, `stash@{1}` is the one before it.",
                 "`stash@{1}` is the most recently created stash.",
                 "stash@{0}", "stash@{1}", id="identifier put where another one is"),
    pytest.param("xargs exits with 123 if any invocation exited with status 1-125\n\n"
                 "124 if the command exited with status 255",
                 "xargs exits with 123 if the command exited with status 255.",
                 "124", "123", id="number put where another one is"),
]  # fmt: skip


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("passage, claim, theirs, ours", SWAPS)
def test_an_exact_thing_swapped_for_another_of_its_kind_is_unsupported_naming_both(
    passage, claim, theirs, ours, embedder
):
    verdict = check(passage, claim, embedder)
    assert verdict.verdict == "unsupported"
    assert theirs in verdict.reason.lower() and ours in verdict.reason.lower()


@pytest.mark.parametrize("passage, claim, theirs, ours", SWAPS)
def test_the_passage_itself_is_supported(passage, claim, theirs, ours):
    # The control: what the passage says, copied, passes; only the swap above is the problem.
    first_line = passage.split("\n")[0]
    assert check(passage, first_line).verdict == "supported"


def test_a_name_of_another_kind_is_not_a_contradiction_but_is_not_confirmed_either():
    verdict = check("Set the option with `--depth` when cloning.", "Set the option with `GIT_DEPTH` when cloning.")
    assert verdict.verdict != "supported" and "git_depth" in verdict.reason


# (passage, claim with a contradicting quantifier or modal, passage's cue, claim's cue)
FLIPS = [
    pytest.param("The socket is accessible only to the current user, but is easily abused by root.",
                 "The socket is accessible to any user on the machine.", "only", "any", id="only -> any"),
    pytest.param("The stream is closed when the 'error' event is emitted unless autoDestroy was set to false.",
                 "The stream is always closed when the 'error' event is emitted, even when autoDestroy was false.",
                 "unless", "even when", id="unless -> always, even when"),
    pytest.param("By default, use of fsmonitor on a repository on a networked filesystem is disabled.",
                 "Use of fsmonitor on a repository on a networked filesystem is always disabled.",
                 "by default", "always", id="by default -> always"),
    pytest.param("Packages may declare a dependency on the runtime environment only.",
                 "Packages must declare a dependency on the runtime environment only.", "may", "must",
                 id="may -> must"),
    pytest.param("A normal user may only change the login shell for her own account.",
                 "A normal user may change the login shell for any account.", "only", "any", id="only -> any account"),
    pytest.param("This option overrides the restriction if the current value of the remote ref is the expected value.",
                 "This option overrides the restriction whatever the current value of the remote ref is.",
                 "if", "whatever", id="if -> whatever"),
]  # fmt: skip


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("passage, claim, theirs, ours", FLIPS)
def test_a_contradicting_quantifier_or_modal_is_unsupported(passage, claim, theirs, ours, embedder):
    verdict = check(passage, claim, embedder)
    assert verdict.verdict == "unsupported"
    assert repr(theirs) in verdict.reason and repr(ours) in verdict.reason


@pytest.mark.parametrize("passage, claim", [
    ("The socket is accessible only to the current user.", "Only the current user can access the socket."),
    ("Implies --single-branch unless --no-single-branch is given.",
     "--single-branch is implied unless --no-single-branch is given."),
    ("By default only local clients may load provider libraries.",
     "By default, only local clients may load provider libraries."),
])  # fmt: skip
def test_the_same_quantifier_said_otherwise_is_no_contradiction(passage, claim):
    assert check(passage, claim).verdict == "supported"


def test_an_obligation_the_text_does_not_state_is_not_supported():
    verdict = check("The variable names a file to read instead of /etc/fstab.",
                    "The variable must name a file to read instead of /etc/fstab.")  # fmt: skip
    assert verdict.verdict != "supported" and "'must'" in verdict.reason


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_release_the_text_does_not_name_is_not_supported(embedder):
    passage = "The `fs.exists()` function is deprecated, but `fs.existsSync()` is not deprecated in Node.js."
    verdict = check(passage, "The `fs.exists()` function will be removed in the next major version of Node.js.",
                    embedder)  # fmt: skip
    assert verdict.verdict != "supported" and "'next major version'" in verdict.reason
    said = "`fs.exists()` is deprecated and will be removed in a future version of Node.js."
    assert check(said, "`fs.exists()` will be removed in a future version of Node.js.", embedder).verdict == "supported"


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_adding_to_what_the_text_closes_is_unsupported(embedder):
    passage = '"git stash" learned the "--staged" option to stash away what has been added to the index (and nothing else).'
    verdict = check(passage, '"git stash --staged" also stashes untracked files.', embedder)
    assert verdict.verdict == "unsupported"
    assert "'nothing else'" in verdict.reason and "untrack" in verdict.reason
    kept = '"git stash --staged" stashes away what has been added to the index, and nothing else.'
    assert check(passage, kept, embedder).verdict == "supported"


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("passage, claim", [
    ("<p>Public modules must be installed in <code class=\"file\"><span class=\"pre\">/usr/lib/python3/dist-packages"
     "</span></code>.</p>", "Public modules must be installed in `/usr/lib/python3/dist-packages`."),
    ("-s::\n\tMake a GPG-signed tag. See linkgit:git-config[1] and 'git tag'.",
     "'git tag -s' makes a GPG-signed tag; see git-config(1)."),
    ("* `'SIGINT'` can usually be generated with <kbd>Ctrl</kbd>+<kbd>C</kbd> (see [raw mode][]).",
     "SIGINT can usually be generated with Ctrl+C."),
    ("The keys are **not** _shared_ between [two instances](docs/llama.md).",
     "The keys are not shared between two instances."),
])  # fmt: skip
def test_markup_on_either_side_is_seen_through(passage, claim, embedder):
    assert check(passage, claim, embedder).verdict == "supported"


LONG = ("When bash is waiting for an asynchronous command via the wait builtin, the reception of a signal for which "
        "a trap has been set will cause the wait builtin to return immediately with an exit status greater than 128, "
        "immediately after which the trap is executed, " * 6).rstrip(", ") + "."  # fmt: skip


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_very_long_sentence_is_judged(embedder):
    assert len(LONG.split()) > 250
    assert check(LONG, LONG, embedder).verdict == "supported"
    assert check(LONG, LONG.replace("128", "255"), embedder).verdict == "unsupported"


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_question_is_not_a_supported_claim(embedder):
    verdict = check("In all cases, bash ignores SIGQUIT.", "Does bash ignore SIGQUIT in all cases?", embedder)
    assert verdict.verdict != "supported" and "question" in verdict.reason


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("claim", ["600", "**600**", "2,048", "`600`"])
def test_a_bare_number_is_not_a_supported_claim(claim, embedder):
    verdict = check("The default is 600 seconds. The cache holds 2,048 entries.", claim, embedder)
    assert verdict.verdict != "supported" and "number" in verdict.reason


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_non_english_text_is_judged_lexically(embedder):
    passage = ("La base de données utilisée par apropos est mise à jour par le programme mandb. Una palabraclave "
               "normalmente es una expresión regular, como si (-r) fuera empleada. Für Schlüsselwörter werden "
               "Anführungszeichen verwendet; 日本語の説明もあります。")  # fmt: skip
    assert check(passage, "La base de données utilisée par apropos est mise à jour par le programme mandb.",
                 embedder).verdict == "supported"  # fmt: skip
    swapped = check(passage, "Una palabraclave normalmente es una expresión regular, como si (-w) fuera empleada.",
                    embedder)  # fmt: skip
    assert swapped.verdict == "unsupported" and "-r" in swapped.reason
    for claim in ("日本語の説明もあります。", "Für Schlüsselwörter werden Anführungszeichen verwendet.", "¿Qué?"):
        assert check(passage, claim, embedder).verdict in ("supported", "weak", "unsupported")


@pytest.mark.parametrize("claim", ["`", "``` ```", "<kbd>", "linkgit:[1]", "[]()", "--", "$", "'", "\u200b"])
def test_degenerate_claims_do_not_crash(claim):
    chunk = Chunk("docs/p.md#0", "docs/p.md", "docs/p.md", "A plain passage about `git gc` and --prune=now.")
    shown = {1: Citation(1, chunk.chunk_id, chunk.doc_id, chunk.uri)}
    result = verify_answer(f"{claim} and more [1]", shown, {chunk.chunk_id: chunk}.get, HashEmbedder())
    assert all(c.verdict != "supported" for c in result.claims)
