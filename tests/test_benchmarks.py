"""The benchmark table machinery: rows, verdicts, rendering, JSON, the runner, child processes. No timing asserts."""

from __future__ import annotations

import json
import sys
import types
from typing import Protocol

import pytest

from benchmarks import __main__ as runner
from benchmarks import child
from benchmarks.child import run_child
from benchmarks.counting import TallyingTokenizer, full_prompt
from benchmarks.followup import common_prefix
from benchmarks.measure import interleaved, percentile
from benchmarks.table import render, row, to_json, verdict
from benchmarks.workload import PromptRecorder
from fakes import HashEmbedder, ScriptedChatModel, WordTokenizer
from models.protocols import ChatModel, Embedder, Tokenizer, protocol_gaps


def test_ratio_is_ours_over_baseline_and_absent_without_a_baseline():
    assert row("x", 3.0, 4.0)["ratio"] == pytest.approx(0.75)
    assert row("x", 3.0)["ratio"] is None
    assert row("x", None, 4.0)["ratio"] is None
    assert row("x", 3.0, 0.0)["ratio"] is None


@pytest.mark.parametrize(
    "ours, baseline, target, expected",
    [
        (96, 100, "ratio >= 0.95", "ok"),
        (94, 100, "ratio >= 0.95", "MISS"),
        (1.3, 1.0, "ratio <= 1.2", "MISS"),
        (1.1, 1.0, "ratio <= 1.2", "ok"),
        (550, 90, "ours <= 600", "ok"),
        (650, 90, "ours <= 600", "MISS"),
        (0.8, 1.0, ">= 1x bare loop", "MISS"),  # the embedding module's wording: read against the ratio
        (1.0, 1.0, "info: share of the answer", ""),
        (None, 1.0, "ours <= 600", ""),
        (float("nan"), 1.0, "ratio >= 0.95", ""),
    ],
)
def test_verdict_reads_the_bound_against_ratio_or_ours(ours, baseline, target, expected):
    assert verdict(row("x", ours, baseline, target)) == expected


def test_render_groups_rows_by_section_and_marks_misses():
    rows = [
        row("decode tok/s", 90.0, 100.0, "ratio >= 0.95", section="generation"),
        row("peak RSS MB", 400.0, 120.0, "ours <= 600", section="memory"),
        row("no baseline", 12.5, section="memory", note="measured once"),
    ]
    text = render(rows, "header line")
    lines = text.splitlines()
    assert lines[0] == "header line"
    assert lines.index("[generation]") < lines.index("[memory]")
    decode = next(line for line in lines if line.startswith("decode tok/s"))
    assert "MISS" in decode and "0.900" in decode
    rss = next(line for line in lines if line.startswith("peak RSS MB"))
    assert " ok " in rss and "3.33" in rss
    assert text.count("[memory]") == 1
    assert lines[lines.index(next(line for line in lines if line.startswith("no baseline"))) + 1] == "    measured once"


def test_json_keeps_every_row_with_its_verdict_and_no_nan():
    rows = [row("a", 1.0, 2.0, "ratio >= 0.95"), row("b", float("nan"), 1.0)]
    data = json.loads(to_json(rows, {"cores": 2}, mode="quick"))
    assert data["machine"] == {"cores": 2} and data["mode"] == "quick"
    assert [r["what"] for r in data["rows"]] == ["a", "b"]
    assert data["rows"][0]["verdict"] == "MISS" and data["rows"][0]["ratio"] == 0.5
    assert data["rows"][1]["ours"] is None and data["rows"][1]["verdict"] is None


def test_a_failing_module_becomes_one_failed_row_and_the_run_goes_on(monkeypatch, capsys):
    good = types.SimpleNamespace(run=lambda quick, smoke: [row("fine", 1.0, 1.0, "ratio >= 0.95")])
    bad = types.SimpleNamespace(run=lambda quick, smoke: 1 / 0)
    monkeypatch.setitem(sys.modules, "benchmarks.fake_good", good)
    monkeypatch.setitem(sys.modules, "benchmarks.fake_bad", bad)
    monkeypatch.setattr(runner, "MODULES", {"fake_bad": "breaks", "fake_good": "works"})
    status = runner.main(["--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == 1
    assert data["rows"][0]["what"].startswith("fake_bad: FAILED (ZeroDivisionError")
    assert data["rows"][1] == {**data["rows"][1], "what": "fine", "section": "fake_good", "verdict": "ok"}
    assert data["modules"]["fake_bad"]["error"].startswith("ZeroDivisionError")


def test_unknown_module_names_are_refused_with_the_choices():
    with pytest.raises(SystemExit, match="unknown module nope in --only: choose from generation"):
        runner.selected("generation,nope", None)
    assert runner.selected(None, "memory,retrieval") == [n for n in runner.MODULES if n not in ("memory", "retrieval")]


def test_interleaved_runs_in_abba_order():
    calls = []
    a, b = interleaved(lambda: calls.append("a") or 1.0, lambda: calls.append("b") or 2.0, 4)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert a == [1.0] * 4 and b == [2.0] * 4


def test_percentile_interpolates_between_ranks():
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile([10, 20], 95) == pytest.approx(19.5)


def test_common_prefix_counts_shared_leading_ids():
    assert common_prefix([1, 2, 3, 4], [1, 2, 9, 4]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0


def test_full_prompt_fills_the_evidence_to_just_under_the_target():
    tokenizer = WordTokenizer()
    messages = [
        {"role": "system", "content": "rules here"},
        {"role": "system", "content": "Excerpts: one two three four five"},
        {"role": "user", "content": "question?"},
    ]
    full = full_prompt(tokenizer, messages, target=60)
    assert tokenizer.count_chat(full) <= 60
    grown = [dict(m) for m in full]
    grown[1]["content"] += " six"
    assert tokenizer.count_chat(grown) > 60
    assert full[0] == messages[0] and full[2] == messages[2]


def test_tallying_tokenizer_counts_whole_text_counts():
    tally = TallyingTokenizer(WordTokenizer())
    tally.count("a b c")
    tally.count_chat([{"role": "user", "content": "hi there"}])
    assert tally.calls == 2 and tally.tokens == 3 + WordTokenizer().count_chat([{"role": "user", "content": "hi there"}])
    assert tally.encode("x y") == [0, 1]  # everything else goes to the real tokenizer


@pytest.mark.parametrize("time_binary", [child.TIME, "/nonexistent/time"])  # GNU time, else the Python wrapper
def test_a_child_is_timed_to_its_first_output_with_its_own_peak_rss(monkeypatch, time_binary):
    monkeypatch.setattr(child, "TIME", time_binary)
    ballast = b"p" * 300_000_000  # the parent's own memory must not show up as the child's peak
    script = "import sys, time; time.sleep(0.2); print('hello', flush=True); x = b'x' * 50_000_000"
    run = run_child([sys.executable, "-c", script], timeout=60)
    assert run.returncode == 0 and run.output.strip() == "hello"
    assert run.first_output is not None and 0.2 <= run.first_output <= run.seconds
    assert 50 < run.peak_rss_mb < 200
    assert len(ballast) == 300_000_000


def test_a_failing_child_reports_its_exit_status_and_errors():
    run = run_child([sys.executable, "-c", "import sys; sys.exit('boom')"], timeout=60)
    assert run.returncode == 1 and "boom" in run.errors and run.first_output is None


def test_the_recorders_the_benchmarks_wrap_implement_the_model_protocols():
    from benchmarks.retrieval import _Known
    from benchmarks.verify import _Counting

    wrappers = [
        (PromptRecorder(ScriptedChatModel()), ChatModel),
        (TallyingTokenizer(WordTokenizer()), Tokenizer),
        (_Counting(HashEmbedder()), Embedder),
        (_Known({}, HashEmbedder()), Embedder),
    ]
    for wrapper, protocol in wrappers:
        assert protocol_gaps(wrapper, protocol) == [] and isinstance(wrapper, protocol)


def test_protocol_gaps_name_a_missing_member_and_a_changed_signature():
    class Stale:  # a ChatModel from before cache_prefix, with an older stream()
        name, n_ctx, n_params, supports_grammar, supports_guard = "stale", 2048, None, True, True
        tokenizer, last_stats = WordTokenizer(), None

        def stream(self, messages, options=None):
            yield ""

    assert protocol_gaps(Stale(), ChatModel) == [
        "missing cache_prefix",
        "stream(messages, options) differs from stream(messages, options, cancel)",
    ]


def test_a_recorder_is_refused_when_built_once_the_protocol_gains_a_member(monkeypatch):
    """What broke four benchmark modules unseen now stops them where the recorder is made, naming the member."""
    from benchmarks import workload

    class Grown(ChatModel, Protocol):
        def warm_up(self) -> None: ...

    monkeypatch.setattr(workload, "ChatModel", Grown)
    with pytest.raises(TypeError, match="PromptRecorder does not implement models.protocols.Grown: missing warm_up"):
        PromptRecorder(ScriptedChatModel())


@pytest.mark.real
def test_real_vectors_embeds_the_corpus_but_the_suite_once_and_a_rerun_continues(tmp_path, real_embedder):
    """benchmarks.real_vectors: the real embedder's rows of a cached corpus's chunks, the suite's left out, in parts
    a later run continues; what it caches is what the embedder gives for the chunks' indexed text."""
    import numpy as np

    from benchmarks import real_corpus, real_vectors
    from rag.ingest.chunking import indexed_text
    from rag.types import Chunk

    chunks = [Chunk(f"{d}#{n}", d, d, f"The {d} page, part {n}: how to mount a disk.", ("Mounting",), n, n)
              for d in ("man/mount.8", "info/coreutils", "realdocs/bash-doc/bash.html") for n in range(3)]
    real_corpus._write(tmp_path / "b1.jsonl.gz", chunks)
    (tmp_path / "manifest.jsonl").write_text(json.dumps({"batch": "b1", "chunks": len(chunks)}) + "\n")
    assert real_vectors.build(tmp_path, minutes=5, progress=lambda line: None) == 6
    folder = real_vectors.folder_for(tmp_path, real_embedder.model_id)
    ids, rows = real_vectors.load(folder)
    assert sorted(ids) == sorted(c.chunk_id for c in chunks if not c.doc_id.startswith("realdocs/"))
    texts = {c.chunk_id: indexed_text(c) for c in chunks}
    assert np.allclose(rows, real_embedder.embed([texts[i] for i in ids]), atol=1e-5)
    assert real_vectors.build(tmp_path, minutes=5, progress=lambda line: None) == 6  # nothing left to embed
    assert len(list(folder.glob("part-*.npz"))) == 1


def test_real_corpus_prints_its_extra_doc_packages_and_none_of_them_is_reserved(capsys, monkeypatch):
    """`python -m benchmarks.real_corpus --packages`: the apt-get line that reproduces the 1M corpus, with no package
    whose text the independent checks keep out (git-doc, nodejs-doc, sqlite3-doc, git-man and the like)."""
    from benchmarks import real_corpus

    assert not [p for p in real_corpus.DOC_PACKAGES if p in real_corpus.RESERVED or real_corpus.RESERVED_DOC_DIR.match(p)]
    monkeypatch.setattr(sys, "argv", ["real_corpus", "--packages"])
    real_corpus.main()
    line = capsys.readouterr().out.split()
    assert line == ["apt-get", "install", "-y", "--no-install-recommends", *real_corpus.DOC_PACKAGES]


def test_shared_store_build_memory_takes_a_size_and_refuses_anything_else():
    """--build-memory goes into a SET statement: only digits and a unit pass, anything else is one argparse line."""
    import argparse

    from benchmarks.shared_store import memory_size

    assert memory_size("3GB") == "3GB" and memory_size("512MB") == "512MB"
    for bad in ("3 GB", "3GB'; DROP TABLE x; --", "lots", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="not a size such as 512MB or 3GB"):
            memory_size(bad)
