"""`smoldocs index` and `smoldocs search`: summaries, the explain view, --json, filters and user errors."""

from __future__ import annotations


import pytest

from agent.cli import main
from agent.surfaces.commands import common
from fakes import HashEmbedder, WordTokenizer
from json_support import read_output

JSON_KEYS = {"rank", "chunk_id", "doc_id", "uri", "heading", "lines", "pages", "score", "bm25_rank", "dense_rank",
             "outdated", "expires", "collection", "text"}


@pytest.fixture
def fake_models(monkeypatch):
    monkeypatch.setattr(common, "load_tokenizer_from_args", lambda args: WordTokenizer())
    monkeypatch.setattr(common, "load_embedder_from_args", lambda args: HashEmbedder(512))


def test_index_prints_a_summary_then_up_to_date(fake_models, docs, tmp_path, capsys):
    args = ["index", "--docs", str(docs), "--index", str(tmp_path / "idx")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "6 files" in out and "rebuilt (new index)" in out and "skipped: 2 empty, 1 not text" in out
    (docs / "readme.txt").write_text("Changed readme about top-k sampling.\n")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "updated: 0 added, 1 changed, 0 removed" in out and "changed: readme.txt" in out
    assert main(args) == 0
    assert "up to date" in capsys.readouterr().out


def test_search_json_lists_ranked_hits_with_every_key(fake_models, docs, tmp_path, capsys):
    code = main(["search", "asciidoc quantization weights", "--docs", str(docs), "--index", str(tmp_path / "i"),
                 "-k", "3", "--json"])
    assert code == 0
    hits = read_output("search", capsys.readouterr().out)["hits"]
    assert 1 <= len(hits) <= 3 and [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert all(set(h) == JSON_KEYS for h in hits)
    assert hits[0]["chunk_id"] == "manual.adoc#0" and hits[0]["lines"] == "1-10"
    assert hits[0]["heading"] == "Asciidoc manual > Quantization" and hits[0]["bm25_rank"] == 1


def test_search_explain_view_shows_score_and_both_ranks(fake_models, docs, tmp_path, capsys):
    assert main(["search", "rst literal block tokenize", "--docs", str(docs), "--index", str(tmp_path / "i")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("3 hits for 'rst literal block tokenize' (hybrid (weighted, learned order), 11 chunks)")
    assert "1. notes.rst#1  lines 10-18  score " in out and "bm25 #1  dense #" in out
    assert "Rst notes > Overview > Details" in out


def test_search_doc_id_filter_and_unknown_doc_id(fake_models, docs, tmp_path, capsys):
    base = ["search", "quantization", "--docs", str(docs), "--index", str(tmp_path / "i"), "--json"]
    assert main(base + ["--doc-id", "guide.md"]) == 0
    assert all(h["doc_id"] == "guide.md" for h in read_output("search", capsys.readouterr().out)["hits"])
    assert main(base + ["--doc-id", "manul.adoc"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown --doc-id 'manul.adoc': did you mean manual.adoc?" in err


def test_doc_id_suggestions_are_escaped_and_an_id_typed_as_shown_is_accepted(fake_models, tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "line\nbreak.md").write_text("# Quantization\n\nQuantization shrinks the weights.\n")
    (docs / "esc\x1b[31mred.md").write_text("# Quantization\n\nQuantization of red weights.\n")
    base = ["search", "quantization", "--docs", str(docs), "--index", str(tmp_path / "i"), "--json"]
    assert main(base + ["--doc-id", "line break.md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean line\\nbreak.md" in err
    assert main(base + ["--doc-id", "esc\\x1b[31mred.md"]) == 0  # as the suggestion and every listing show it
    hits = read_output("search", capsys.readouterr().out)["hits"]
    assert hits and {h["doc_id"] for h in hits} == {"esc\x1b[31mred.md"}


def test_search_with_no_match_says_so(fake_models, docs, tmp_path, capsys):
    base = ["search", "the of and", "--docs", str(docs), "--index", str(tmp_path / "i")]
    assert main(base + ["--mode", "bm25"]) == 0
    assert capsys.readouterr().out.startswith("no results for 'the of and'")
    assert main(base + ["--mode", "bm25", "--json"]) == 0
    assert read_output("search", capsys.readouterr().out)["hits"] == []


def test_missing_docs_folder_is_one_line_exit_2(fake_models, tmp_path, capsys):
    assert main(["search", "x", "--docs", str(tmp_path / "missing"), "--index", str(tmp_path / "i")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("smoldocs: error: docs folder not found") and err.count("\n") == 1


def test_bad_k_is_an_argparse_error(fake_models, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["search", "x", "-k", "0"])
    assert exc.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_progress_bar_draws_on_a_terminal_and_prints_notices_anywhere():
    import io

    from rag.indexing.build import IndexProgress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    bar = common.ProgressBar(tty)
    bar(IndexProgress("embed", 120, 294, rate=85.4))
    bar(IndexProgress("notice", message="index settings changed (chunker); rebuilding it"))
    assert "embedding [#########...............] 120/294 chunks  85 chunks/s" in tty.getvalue()
    assert "smoldocs: index settings changed (chunker); rebuilding it\n" in tty.getvalue()
    bar._last = 0.0
    bar(IndexProgress("read", 40, 300, message="manuals/big.pdf"))  # the pages of one long PDF
    assert tty.getvalue().endswith("reading   [###.....................] 40/300 pages")
    pipe = io.StringIO()
    common.ProgressBar(pipe)(IndexProgress("embed", 1, 2))
    assert pipe.getvalue() == ""


@pytest.mark.real
def test_real_search_json_on_the_bundled_corpus(real_index, capsys):
    # No --docs/--index: the bundled corpus and its cache folder, which the real_index fixture already built.
    code = main(["search", "How large is the KV cache of SmolLM2-135M?", "--json"])
    assert code == 0
    hits = read_output("search", capsys.readouterr().out)["hits"]
    assert len(hits) == 5 and "docs/kv-cache.md" in {h["doc_id"] for h in hits[:3]}


@pytest.mark.parametrize("files", [1, 2])
def test_bm25_finds_words_in_a_one_or_two_file_folder(fake_models, tmp_path, capsys, files):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "only.md").write_text("# Cache\n\nThe cache keeps the last answers for reuse.\n")
    if files == 2:
        (docs / "other.md").write_text("# Rope\n\nRope scaling stretches the context; the cache is not involved.\n")
    code = main(["search", "cache answers", "--mode", "bm25", "--docs", str(docs), "--index", str(tmp_path / "i"), "--json"])
    assert code == 0
    hits = read_output("search", capsys.readouterr().out)["hits"]
    assert hits and hits[0]["doc_id"] == "only.md" and hits[0]["score"] > 0
