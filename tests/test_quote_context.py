"""Quotes a person can read: no markup, the context a sentence needs, no title lines or navigation quoted."""

from __future__ import annotations

from rag.answering.extractive import QUOTE_LABEL, extractive_answer
from rag.answering.quote_features import candidates
from rag.citations import Citation
from rag.types import Chunk
from rag.verification.markup import readable
from rag.verification.verifier import verify_answer


def _shown(*chunks: Chunk):
    index = {c.chunk_id: c for c in chunks}
    return {i: Citation(i, c.chunk_id, c.doc_id, c.uri) for i, c in enumerate(chunks, 1)}, index.get


def _chunk(doc_id: str, text: str, heading: tuple[str, ...] = ()) -> Chunk:
    return Chunk(f"{doc_id}#1", doc_id, doc_id, text, heading)


def _sentences(*chunks: Chunk) -> list[str]:
    shown, lookup = _shown(*chunks)
    return [c.sentence for c in candidates(shown, lookup)]


def test_asciidoc_labels_continuations_and_underlines_are_not_shown():
    text = ("OPTIONS\n-------\n--merge::\n\tResets the index and updates the files in the working tree.\n+\n"
            "Local changes are kept when the merge would not touch them.\n")
    found = _sentences(_chunk("git-reset.txt", text))
    assert found == ["--merge: Resets the index and updates the files in the working tree.",
                     "Local changes are kept when the merge would not touch them."]
    assert not any("::" in s or "---" in s or s.startswith("+") for s in found)


def test_rst_directives_roles_references_and_underlines_are_not_shown():
    text = (
        "Escaping\n========\n\n"
        ".. note:: Backslashes escape markup characters in every context.\n\n"
        "Asterisks are valid URL characters (see :RFC:`2396`), see `Escaping Mechanism`_ and the\n"
        "rst2html.py_ front end [#]_.  Use ``\\*`` or `Click-N-Type <http://example.org/cnt/>`__ instead.\n\n"
        ".. _Escaping Mechanism: https://docutils.sourceforge.io/docs/ref/rst/restructuredtext.html\n"
        ".. image:: escaping.png\n   :alt: a picture of a backslash\n"
    )
    found = _sentences(_chunk("docs/escaping.rst", text))
    assert found == [
        "Note: Backslashes escape markup characters in every context.",
        "Asterisks are valid URL characters (see RFC 2396), see Escaping Mechanism and the rst2html.py front end.",
        "Use `\\*` or Click-N-Type instead.",
    ]


def test_html_leftovers_are_not_shown():
    text = "Press <kbd>Ctrl</kbd>+<kbd>C</kbd> to stop the server &amp; close the connection.<br/>"
    assert _sentences(_chunk("docs/stop.md", text)) == ["Press Ctrl+C to stop the server & close the connection."]


def test_readable_keeps_names_and_typographic_quotes_as_written():
    text = "If you don\u2019t mind, the generated __init__() method of a class_ runs **first**."
    assert readable(text) == "If you don\u2019t mind, the generated __init__() method of a class_ runs first."


def test_readable_keeps_titles_as_headings_and_code_underlines_inside_literal_blocks():
    assert readable("Sections\n========\n\nBody text here.", "rst").split("\n")[0] == "# Sections"
    assert readable("````\ncode\n````", "md") == "````\ncode\n````"  # four backticks open a fence
    literal = "For example::\n\n    Title\n    =====\n"
    assert "    =====" in readable(literal, "rst")


def test_rst_literal_blocks_are_code_never_sentences():
    text = ("* Most shells expand globs::\n\n      rst2html.py *.txt\n\n"
            "  It might be nice to accept several arguments.\n")
    assert readable(text, "rst") == ("* Most shells expand globs:\n\n```\n      rst2html.py *.txt\n```\n\n"
                                     "  It might be nice to accept several arguments.\n")
    shown, lookup = _shown(_chunk("docs/globs.rst", text))
    found = {c.sentence: c for c in candidates(shown, lookup)}
    assert set(found) == {"Most shells expand globs:", "It might be nice to accept several arguments."}
    assert found["Most shells expand globs:"].after == "`rst2html.py *.txt`"


def test_a_sentence_that_points_back_brings_the_sentence_before():
    text = ("Two dumps of the same database are compared byte for byte. If they come first and are byte-identical, "
            "the second is skipped.\n\nThis paragraph stands alone.")
    shown, lookup = _shown(_chunk("docs/dumps.md", text))
    found = {c.sentence: c for c in candidates(shown, lookup)}
    pointing = found["If they come first and are byte-identical, the second is skipped."]
    assert pointing.before == "Two dumps of the same database are compared byte for byte."
    assert found["Two dumps of the same database are compared byte for byte."].before == ""
    assert found["This paragraph stands alone."].before == ""  # the sentence before is in another paragraph


def test_a_sentence_brings_the_next_one_when_it_goes_on_from_it():
    text = ("Running the jobs inside the request blocks the worker for minutes. Instead, use a task queue such as "
            "Celery. The queue needs a broker.\n\nA worker can be restarted by its supervisor process. To do this, send the supervisor a SIGHUP signal.\n\n"
            "Old rows are kept. This is the default, and it can be changed with the retention setting, which takes a "
            "number of days, a size, or both of them, and applies to every table of every database on the server at once, whatever its owner says.\n\n"
            "The pool holds ten connections. That limit applies to each database separately.")
    shown, lookup = _shown(_chunk("docs/jobs.md", text))
    found = {c.sentence: c for c in candidates(shown, lookup)}
    blocking = found["Running the jobs inside the request blocks the worker for minutes."]
    assert blocking.after == "Instead, use a task queue such as Celery."
    assert blocking.passage == (blocking.sentence, "Instead, use a task queue such as Celery.")
    assert found["Instead, use a task queue such as Celery."].after == ""  # "The queue needs ..." is a new point
    restart = found["A worker can be restarted by its supervisor process."]
    assert restart.after == "To do this, send the supervisor a SIGHUP signal."
    assert found["Old rows are kept."].after == ""  # too long to be the end of this sentence
    assert found["The queue needs a broker."].after == ""  # the next sentence is in another paragraph
    assert found["That limit applies to each database separately."].before == "The pool holds ten connections."
    assert found["The pool holds ten connections."].after == "That limit applies to each database separately."


def test_a_quote_shows_the_sentence_that_goes_on_from_it_with_its_citation():
    text = ("Long jobs inside a request block the worker for minutes. Instead, use a task queue such as Celery.\n\n"
            "Workers are processes.")
    shown, lookup = _shown(_chunk("docs/jobs.md", text))
    text, numbers = extractive_answer("My long jobs block the worker inside a request, what should I do?", shown, lookup, None)
    assert numbers == (1,) and "> Long jobs inside a request block the worker for minutes. [1]" in text
    assert "Instead, use a task queue such as Celery. [1]" in text


def test_a_colon_sentence_brings_the_list_it_introduces_under_a_cap():
    items = "\n".join(f"- variation number {i} changes the key of the cache entry" for i in range(1, 10))
    text = f"Small variations destroy the match:\n\n{items}\n\nAfter the list, prose again."
    shown, lookup = _shown(_chunk("docs/match.md", text))
    intro = next(c for c in candidates(shown, lookup) if c.sentence.endswith(":"))
    lines = intro.after.split("\n")
    assert lines[0] == "- variation number 1 changes the key of the cache entry"
    assert 1 < len(lines) < 9 and all(line.startswith("- variation") for line in lines)  # whole items, cut
    assert "prose again" not in intro.after


def test_a_colon_sentence_brings_the_code_it_introduces():
    text = "To create the table, run:\n\n```\nCREATE TABLE t (\n    id serial\n);\n```\n\nThen load the data."
    shown, lookup = _shown(_chunk("docs/serial.md", text))
    intro = next(c for c in candidates(shown, lookup) if c.sentence.endswith(":"))
    assert intro.after == "`CREATE TABLE t ( id serial );`"


def test_a_table_row_comes_with_the_header_row():
    text = ("Table 8.11. Time Input\n\nExample | Description\n\n04:05:06.789 | ISO 8601\n\n"
            "04:05 PM | same as 16:05; input hour must be <= 12")
    shown, lookup = _shown(_chunk("datatype-datetime.html", text))
    row = next(c for c in candidates(shown, lookup) if c.sentence.startswith("04:05 PM"))
    assert row.header == "Example | Description"
    assert row.passage[0] == "Example | Description"


def test_title_lines_headings_and_navigation_are_never_quoted():
    text = (
        "git-mergetool - Run merge conflict resolution tools to resolve merge conflicts\n\n"
        "Use git mergetool to run one of several merge utilities to resolve merge conflicts.\n\n"
        "Merge Options\n\n"
        "Prev | Up | Next\n\n7.7. VALUES Lists | Home | Chapter 8. Data Types"
    )
    found = _sentences(_chunk("git-mergetool.html", text, ("git-mergetool(1) Manual Page",)))
    assert found == ["Use git mergetool to run one of several merge utilities to resolve merge conflicts."]


def test_the_shown_answer_cites_every_sentence_and_verifies():
    text = ("The cache lives in the user's cache folder. It is keyed by the path of the docs folder.\n\n"
            "Stale entries are removed by the prune command:\n\n- entries older than 30 days are dropped\n"
            "- entries of deleted folders are dropped\n")
    chunk = _chunk("docs/cache.md", text)
    shown, lookup = _shown(chunk)
    answer, used = extractive_answer("Is the cache keyed by the path of the docs folder, and which command removes stale entries?", shown, lookup, None)
    blocks = answer.split("\n\n")
    assert blocks[0] == QUOTE_LABEL and used == (1,)
    assert all(line.startswith("> ") for block in blocks[1:] for line in block.split("\n"))
    assert ("> The cache lives in the user's cache folder. [1] It is keyed by the path of the docs folder. [1]"
            in blocks[1:])
    result = verify_answer(answer, shown, lookup, None)
    assert result.claims and all(c.citations == (1,) for c in result.claims)
    assert all(c.verdict == "supported" for c in result.claims)


def test_asciidoc_link_macros_show_their_title():
    text = "See link:howto/revert-a-faulty-merge.html[Revert a faulty merge] and https://git-scm.com/book[the book]."
    assert readable(text, "asciidoc") == "See Revert a faulty merge and the book."
    assert readable("Read link:x.html[] first.", "asciidoc") == "Read x.html first."  # no title: the target


def test_a_colon_sentence_with_nothing_after_it_is_not_a_candidate():
    cut = Chunk("g.adoc#1", "g.adoc", "g.adoc",
                "Create a new branch head pointing to one of these versions and check it out using git-switch(1):",
                ("Branches",), 1, 1)
    whole = Chunk("h.adoc#1", "h.adoc", "h.adoc",
                  "Create a branch and switch to it:\n\n* git switch -c topic\n", ("Branches",), 1, 3)
    shown = {1: Citation(1, cut.chunk_id, cut.doc_id, cut.uri), 2: Citation(2, whole.chunk_id, whole.doc_id, whole.uri)}
    found = candidates(shown, {c.chunk_id: c for c in (cut, whole)}.get)
    assert {c.n for c in found} == {2}  # the colon sentence that brings what it introduces, and its item
    assert "git switch -c topic" in next(c.after for c in found if c.sentence.endswith(":"))
