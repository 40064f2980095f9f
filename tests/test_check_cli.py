"""`smoldocs check`: reading what was shown, verdicts for hand-written answers, and the exit codes."""

from __future__ import annotations

import io
import json

import pytest

from agent.cli import main
from agent.surfaces.commands import common
from rag.verification.answer_check import check_citations, supported_share
from rag.errors import ShownUnreadable
from rag.excerpts.packing import OUTDATED_TAG, block, join_blocks, sourced_block
from rag.excerpts.shown_file import UNMATCHED, read_shown
from rag.types import Chunk
from json_support import read_output


class Catalog:
    def __init__(self, chunks):
        self.chunks = list(chunks)
        self._by_id = {c.chunk_id: c for c in chunks}

    def chunk(self, chunk_id):
        return self._by_id.get(chunk_id)


A1 = Chunk("docs/a.md#1", "docs/a.md", "docs/a.md", "The cache keeps keys and values for every earlier token.", ("A",), 1, 2)
A2 = Chunk("docs/a.md#2", "docs/a.md", "docs/a.md", "Prefix reuse skips the shared part of the prompt.", ("A", "B"), 4, 5)
B1 = Chunk("docs/b.md#1", "docs/b.md", "docs/b.md", "[2] see the table below\nBM25 ranks documents by term frequency.", (), 1, 3)
CATALOG = Catalog([A1, A2, B1])


def pairs(shown):
    return sorted((n, c.chunk_id) for n, c in shown.items())


def test_json_list_and_pack_json_are_read():
    assert pairs(read_shown('[{"n": 1, "chunk_id": "docs/a.md#2"}, {"n": 3, "chunk_id": "docs/b.md#1"}]', CATALOG)) == [
        (1, "docs/a.md#2"), (3, "docs/b.md#1")]
    packed = {"query": "q", "citations": [{"n": 2, "chunk_id": "docs/a.md#1", "doc_id": "docs/a.md", "uri": "docs/a.md"}]}
    assert pairs(read_shown(json.dumps(packed), CATALOG)) == [(2, "docs/a.md#1")]


def test_plain_excerpts_are_matched_to_chunks_by_their_text():
    text = join_blocks([block(1, A2), block(2, B1), block(3, A1)])
    # B1's own text holds a line `[2] see the table below`: it is not taken for a header.
    assert pairs(read_shown(text, CATALOG)) == [(1, "docs/a.md#2"), (2, "docs/b.md#1"), (3, "docs/a.md#1")]


def test_smoldocs_pack_report_is_read_by_its_list_of_chunk_ids():
    report = "\n".join([
        "query:     cache", "budget:    1024 tokens", "  - rank 3: docs/b.md#1 (duplicate_text)",
        "  [1] docs/a.md#2", "  [2] docs/a.md#1", "", join_blocks([block(1, A2), block(2, A1)]),
    ])  # fmt: skip
    assert pairs(read_shown(report, CATALOG)) == [(1, "docs/a.md#2"), (2, "docs/a.md#1")]


def test_an_outdated_tag_after_the_uri_is_read_past():
    text = block(1, A2).replace("[1] docs/a.md\n", f"[1] docs/a.md {OUTDATED_TAG}\n")
    assert pairs(read_shown(text, CATALOG)) == [(1, "docs/a.md#2")]


def test_sourced_excerpts_name_their_chunk_even_when_it_is_gone():
    gone = Chunk("docs/a.md#9", "docs/a.md", "docs/a.md", "Deleted since.", (), 1, 1)
    text = "note: the docs changed\n\n" + join_blocks([sourced_block(4, A1), sourced_block(5, gone)])
    assert pairs(read_shown(text, CATALOG)) == [(4, "docs/a.md#1"), (5, "docs/a.md#9")]


def test_an_excerpt_whose_text_no_chunk_has_is_kept_as_unmatched():
    edited = Chunk("docs/a.md#1", "docs/a.md", "docs/a.md", "Text that was edited since.", (), 1, 1)
    shown = read_shown(block(1, edited), CATALOG)
    assert shown[1].chunk_id == "docs/a.md" + UNMATCHED
    assert check_citations("The cache keeps keys and values for every token [1].", shown, CATALOG.chunk, None).unresolved == (1,)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "SHOWN is empty"),
        ("just some words", "holds no numbered excerpt"),
        ('{"a": 1}', "JSON but not a list"),
        ('[{"n": 0, "chunk_id": "docs/a.md#1"}]', "item 1"),
        ('[{"n": 1, "chunk_id": "docs/a.md#1"}, {"n": 1, "chunk_id": "docs/a.md#2"}]', "two chunks"),
    ],
)
def test_unreadable_shown_is_one_clear_error(text, fragment):
    with pytest.raises(ShownUnreadable, match=fragment):
        read_shown(text, CATALOG)


@pytest.mark.parametrize("text, where", [
    ('[{"n": 1, "chunk_id": "docs/a.md#1"},\n {"n": 2, "chunk_', "line 2"),
    ('{"citations": [\n\n{"n": 1 "chunk_id": "docs/a.md#1"}]}', "line 3"),
])
def test_truncated_json_shown_names_the_json_error_and_its_line(text, where):
    with pytest.raises(ShownUnreadable, match="not valid JSON") as err:
        read_shown(text, CATALOG)
    assert where in str(err.value) and "holds no numbered excerpt" not in str(err.value)


def test_a_file_name_with_a_line_break_keeps_its_excerpt_header_on_one_line():
    from rag.excerpts.packing import block, sourced_block

    odd = Chunk("docs/a\nb\u2028c.md#0", "docs/a\nb\u2028c.md", "docs/a\nb\u2028c.md", "Odd names are escaped.", (), 1, 1)
    for render in (block, sourced_block):
        head = render(1, odd).splitlines()[0]
        assert head == "[1] docs/a\\nb\\u2028c.md"
        assert pairs(read_shown(render(1, odd), Catalog([odd, A1]))) == [(1, odd.chunk_id)]


def test_verdicts_for_every_kind_of_marker():
    shown = read_shown('[{"n": 1, "chunk_id": "docs/a.md#1"}, {"n": 2, "chunk_id": "docs/a.md#404"}]', CATALOG)
    answer = (
        "The cache keeps keys and values for every earlier token [1]. "
        "Quantization shrinks the weights to four bits per value [1]. "
        "Prefix reuse is documented elsewhere [2]. BM25 was invented in 1994 by Robertson [7]."
    )
    report = check_citations(answer, shown, CATALOG.chunk, None)
    verdicts = {c.n: c.verdict for c in report.citations}
    assert verdicts == {1: "unsupported", 2: "unresolved", 7: "made_up"}  # [1] keeps its weakest verdict
    assert [c.verdict for c in report.claims] == ["supported", "unsupported", "unresolved", "made_up"]
    assert report.made_up == (7,) and report.unresolved == (2,) and supported_share(report) == 0.25
    uncited = check_citations("BM25 ranks documents by term frequency.", shown, CATALOG.chunk, None)
    assert uncited.citations == () and [c.verdict for c in uncited.claims] == ["uncited"]
    assert supported_share(check_citations("Thanks!", shown, CATALOG.chunk, None)) is None


def test_a_chunk_changed_since_it_was_shown_is_unresolved():
    shown = read_shown('[{"n": 1, "chunk_id": "docs/a.md#1"}]', CATALOG)
    report = check_citations("The cache keeps keys and values for every earlier token [1].", shown, CATALOG.chunk, None, changed={1})
    assert report.unresolved == (1,) and "changed in the docs" in report.citations[0].reason
    assert "changed in the docs" in report.claims[0].reason


# -- the command, against the real index ------------------------------------------------------------------------

SENTENCE = "Keys are stored after the rotary position embedding has been applied"


@pytest.fixture
def real_cli(monkeypatch, real_tokenizer, real_embedder, real_index, tmp_path):
    """`smoldocs check` over the bundled docs, reusing the session's model objects and index."""
    monkeypatch.setattr(common, "load_tokenizer_from_args", lambda args: real_tokenizer)
    monkeypatch.setattr(common, "load_embedder_from_args", lambda args: real_embedder)
    assert SENTENCE in real_index.chunk("docs/kv-cache.md#1").text
    shown = tmp_path / "shown.json"
    shown.write_text(json.dumps([{"n": 1, "chunk_id": "docs/kv-cache.md#1"}, {"n": 2, "chunk_id": "docs/kv-cache.md#999"}]))

    def run(answer: str, *extra: str) -> tuple[int, str, str]:
        path = tmp_path / "answer.md"
        path.write_text(answer)
        return main(["check", str(path), "--shown", str(shown), *extra])

    return run, shown


@pytest.mark.real
@pytest.mark.parametrize(
    "answer, extra, code, verdict",
    [
        (f"{SENTENCE} [1].", (), 0, "supported"),
        ("The KV cache is stored on a floppy disk in the basement [1].", (), 0, "unsupported"),
        ("The KV cache is stored on a floppy disk in the basement [1].", ("--min-supported", "0.5"), 1, "unsupported"),
        (f"{SENTENCE} [3].", (), 1, "made_up"),
        (f"{SENTENCE} [2].", (), 1, "unresolved"),
    ],
)
def test_check_hand_written_answers(real_cli, capsys, answer, extra, code, verdict):
    run, _ = real_cli
    assert run(answer, "--json", *extra) == code
    captured = capsys.readouterr()
    report = read_output("check", captured.out)
    assert report["citations"][0]["verdict"] == verdict and report["passed"] is (code == 0)
    assert ("smoldocs check: failed" in captured.err) is (code == 1)


@pytest.mark.real
def test_check_reads_the_answer_from_stdin_and_excerpts_as_printed(real_cli, real_index, real_tokenizer, capsys, monkeypatch, tmp_path):
    from rag.excerpts.packing import Ledger, Packer

    hits = real_index.search("rotary position embedding keys stored", k=3)
    packed, citations = Packer(real_tokenizer, Ledger()).assemble("q", hits, 1024)
    number = next(c.n for c in citations if c.chunk_id == "docs/kv-cache.md#1")
    excerpts = tmp_path / "excerpts.txt"
    excerpts.write_text(packed.text)
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{SENTENCE} [{number}]."))
    assert main(["check", "-", "--shown", str(excerpts)]) == 0
    out = capsys.readouterr().out
    assert f"[{number}] supported" in out and "docs/kv-cache.md#1" in out and "100% of claims" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["check", "missing.md", "--shown", "shown.json"], "answer file not found"),
        (["check", "-", "--shown", "-"], "only one of"),
    ],
)
def test_check_usage_errors_are_one_line(capsys, argv, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "\n" not in err


def test_check_refuses_a_huge_answer_before_loading_anything(capsys, tmp_path):
    huge = tmp_path / "huge.md"
    huge.write_text("word " * 10_000)
    assert main(["check", str(huge), "--shown", str(huge)]) == 2
    assert "more than 20000" in capsys.readouterr().err


def test_min_supported_must_be_a_share(capsys):
    with pytest.raises(SystemExit) as done:
        main(["check", "a.md", "--shown", "s.json", "--min-supported", "2"])
    assert done.value.code == 2 and "from 0 to 1" in capsys.readouterr().err
