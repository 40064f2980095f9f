"""A shown answer does not mislead (#36, defect 10): a document line equal to smoldocs' own quote label is never
quoted, a quote the verifier judges unsupported is never shown, and a quote a sentence overrides ("since 3.0",
"no longer", "deprecated", ...) never leads without that sentence before it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agent.cli import main
from agent.turn.quoting import QuoteUnit
from agent.session import ChatSession
from agent.settings import AgentSettings
from agent.turn.verified import quote_display
from fakes import HashEmbedder, ScriptedChatModel
from rag.answering.extractive import QUOTE_LABEL, extractive_answer
from rag.answering.overrides import overrides
from rag.citations import Citation
from rag.types import Chunk
from rag.verification.verdicts import Verdict
from rag.verification.verifier import Verifier
from test_agent_loop import MemoryRetriever, final


def _chunk(doc: str, text: str, heading: str = "H") -> Chunk:
    return Chunk(f"{doc}#0", doc, doc, text, (heading,), 1, text.count("\n") + 1)


def _shown(*chunks: Chunk) -> dict[int, Citation]:
    return {n: Citation(n, c.chunk_id, c.doc_id, c.uri) for n, c in enumerate(chunks, 1)}


class Doubting:
    """The real verifier, except that it judges every claim holding `word` unsupported."""

    def __init__(self, word: str) -> None:
        self.real = Verifier(None)
        self.word = word

    def __call__(self, text, shown, lookup):
        v = self.real(text, shown, lookup)
        doubted = tuple(replace(c, verdict=Verdict.UNSUPPORTED) if self.word in c.text else c for c in v.claims)
        return replace(v, claims=doubted)


# -- (a) our own label, and unsupported quotes ------------------------------------------------------------------

BACKUPS = _chunk("backups.md", "Quoted from the docs:\n\nBackups run every night at two and keep seven copies of the "
                 "database.\n\nBackups are written to the backup volume.", "Backups")  # fmt: skip


@pytest.mark.parametrize("embedder", [None, HashEmbedder()], ids=["lexical", "hash"])
@pytest.mark.parametrize("line", [QUOTE_LABEL, "**Quoted from the docs:**", "quoted from the docs",
                                  "> Quoted from the docs:"])
def test_a_document_line_equal_to_our_own_label_is_never_quoted(line, embedder):
    chunk = replace(BACKUPS, text=BACKUPS.text.replace(QUOTE_LABEL, line))
    text, _ = extractive_answer("Quoted from the docs: when do backups run?", _shown(chunk),
                                {chunk.chunk_id: chunk}.get, embedder, max_sentences=4)  # fmt: skip
    assert text.startswith(QUOTE_LABEL + "\n\n> Backups")
    assert text.count("uoted from the docs") == 1, text  # the label we print, once


def _session(chunks, judge=None, decoding="extractive", replies=("never used",)):
    session = ChatSession(ScriptedChatModel(list(replies)), MemoryRetriever(chunks), embedder=HashEmbedder(),
                          settings=AgentSettings(policy="search-first", fallback=True, decoding=decoding))  # fmt: skip
    if judge is not None:
        session.agent.judge = judge
    return session


def test_extractive_answer_never_shows_a_quote_the_verifier_judges_unsupported():
    session = _session([BACKUPS], judge=Doubting("seven copies"))
    answer = final(session.ask("when do backups run and where are backups written"))
    assert answer.quoted and answer.status == "answered"
    assert "seven copies" not in answer.text
    assert "> Backups are written to the backup volume. [1]" in answer.text
    assert all(c.verdict is not Verdict.UNSUPPORTED for c in answer.claims)


def test_extractive_answer_declines_when_the_verifier_supports_no_quote():
    session = _session([BACKUPS], judge=Doubting("Backups"))
    answer = final(session.ask("when do backups run and where are backups written"))
    assert not answer.quoted and answer.status == "insufficient_evidence"
    assert "Backups" not in answer.text


def test_the_free_modes_quoted_fallback_never_shows_a_quote_the_verifier_judges_unsupported():
    session = _session([BACKUPS], judge=Doubting("seven copies"), decoding="free",
                       replies=["Backups are kept for ever on tape [1]."])  # fmt: skip
    answer = final(session.ask("when do backups run and where are backups written"))
    assert answer.quoted and "seven copies" not in answer.text
    assert "> Backups are written to the backup volume. [1]" in answer.text


def test_quote_decoding_never_shows_a_reference_the_verifier_judges_unsupported():
    units = [QuoteUnit("Backups run every night at two and keep seven copies of the database.", 1, ""),
             QuoteUnit("Backups are written to the backup volume.", 1, "")]  # fmt: skip
    display = quote_display(units, Doubting("seven copies"), _shown(BACKUPS), {BACKUPS.chunk_id: BACKUPS}.get)
    assert display.text == "> Backups are written to the backup volume. [1]"
    assert "seven copies" in display.draft  # held back, not lost


# -- (b) a quote a sentence overrides ------------------------------------------------------------------------------

@pytest.mark.parametrize("earlier, later", [
    ("Compression is enabled by default.", "Since version 3.0, compression is disabled by default."),
    ("Plugins are loaded from the plugins folder.", "As of version 3, plugins are no longer loaded from the plugins "
                                                    "folder."),
    ("The `--fast` flag skips checksum verification.", "The `--fast` flag no longer skips checksum verification."),
    ("Use `open_stream()` to read a file in chunks.", "`open_stream()` is deprecated; use `read_chunks()` instead."),
    ("The `sync` command uploads changed files.", "The `sync` command has been replaced by `push`."),
    ("The legacy parser handles XML input.", "The legacy parser was removed in 2.4."),
    ("Reports are written as CSV files.", "In 3.x, reports are written as JSON files."),
])  # fmt: skip
def test_a_sentence_that_says_what_changed_overrides_one_about_the_same_thing(earlier, later):
    assert overrides(later, earlier)
    assert not overrides(earlier, later)  # the older statement overrides nothing


@pytest.mark.parametrize("earlier, later", [
    ("Compression is enabled by default.", "Since version 3.0, log files are rotated every day."),
    ("Compression is enabled by default.", "Compression is enabled by default."),
    ("The `sync` command uploads changed files.", "The `status` command has been replaced by `info`."),
    ("Compression is enabled by default.", "Compression uses the zstd algorithm at level 3."),
])  # fmt: skip
def test_a_sentence_about_something_else_or_without_a_change_overrides_nothing(earlier, later):
    assert not overrides(later, earlier)


COMPRESSION = _chunk("compression.md", "Compression is enabled by default.\n\nLarge files are split into blocks of "
                     "four megabytes before they are stored.\n\nSince version 3.0, compression is disabled by "
                     "default; set `compress = true` to turn it on.", "Compression")  # fmt: skip


@pytest.mark.parametrize("embedder", [None, HashEmbedder()], ids=["lexical", "hash"])
@pytest.mark.parametrize("max_sentences", [1, 3])
def test_the_overriding_sentence_leads_the_quote_it_overrides(embedder, max_sentences):
    lookup = {COMPRESSION.chunk_id: COMPRESSION}.get
    text, _ = extractive_answer("Is compression enabled by default?", _shown(COMPRESSION), lookup, embedder,
                                max_sentences=max_sentences)  # fmt: skip
    first = text.split("\n\n")[1]
    assert first.startswith("> Since version 3.0, compression is disabled by default"), text
    assert text.index("Since version 3.0") < text.index("Compression is enabled by default")


def test_an_overriding_sentence_of_another_shown_excerpt_leads_too():
    old = _chunk("guide.md", "Compression is enabled by default.\n\nThe theme uses blue headings.", "Guide")
    new = _chunk("changes.md", "Since version 3.0, compression is disabled by default.\n\nThe installer is smaller.",
                 "Changes")  # fmt: skip
    text, _ = extractive_answer("Is compression enabled by default?", _shown(old, new),
                                {c.chunk_id: c for c in (old, new)}.get, None)  # fmt: skip
    assert text.split("\n\n")[1] == "> Since version 3.0, compression is disabled by default. [2]", text


# -- through the real `smoldocs ask` ----------------------------------------------------------------------------


def _docs(tmp_path, pages: dict[str, str]):
    docs = tmp_path / "d"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


OTHER_PAGES = {"b.md": "# Colours\n\nThe theme uses blue headings and grey text.\n",
               "c.md": "# Install\n\nRun the installer and restart the shell afterwards.\n"}  # fmt: skip


@pytest.mark.real
def test_ask_never_quotes_a_document_line_equal_to_our_label(tmp_path, capsys):
    docs = _docs(tmp_path, {"a.md": "# Backups\n\nQuoted from the docs:\n\nBackups run every night at two in the "
                                    "morning and keep seven copies.\n", **OTHER_PAGES})  # fmt: skip
    code = main(["ask", "Quoted from the docs: when do backups run?", "--docs", str(docs)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "> Quoted from the docs:" not in out
    assert "> Backups run every night" in out
    assert "NOT supported" not in out


@pytest.mark.real
def test_ask_leads_with_the_sentence_that_overrides_a_quote(tmp_path, capsys):
    docs = _docs(tmp_path, {"a.md": "# Compression\n\nCompression is enabled by default.\n\nLarge files are split "
                                    "into blocks of four megabytes before they are stored.\n\nSince version 3.0, "
                                    "compression is disabled by default; set `compress = true` to turn it on.\n",
                            **OTHER_PAGES})  # fmt: skip
    code = main(["ask", "Is compression enabled by default in version 3?", "--docs", str(docs)])
    out, err = capsys.readouterr()
    assert code == 0, err
    quotes = [line for line in out.splitlines() if line.startswith("> ")]
    assert quotes and quotes[0].startswith("> Since version 3.0, compression is disabled by default"), out
