"""The eval's metric functions, gate and report on hand-made cases, and records built from scripted turns."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from agent.errors import UsageError
from agent.eval.metrics import (
    Thresholds,
    answer_metrics,
    citation_metrics,
    cost_metrics,
    evidence_overlap,
    invariant_failures,
    percentile,
    problems,
    threshold_failures,
)
from agent.eval.records import CitedChunk, Record, ToolRound
from agent.eval.report import build_report, format_markdown, format_terminal, write_report
from agent.eval.runner import load_question_file, run_question, shown_markers, stratified, tool_steps
from agent.events import Answer, SearchFinished
from agent.events import ToolStep as ToolStepEvent
from agent.session import ChatSession
from agent.settings import AgentSettings
from fakes import HashEmbedder, ScriptedChatModel
from rag.evaluation import Question, load_questions
from rag.types import Chunk, Hit, RetrieverDefaults

GOLD = "docs/kv-cache.md#0"


def cite(n, verdict="supported", chunk=GOLD, gold=True, shown=True, in_index=True):
    return CitedChunk(n, verdict, chunk, chunk.split("#")[0] if chunk else None, in_index, shown, gold)


def rec(id="q1", doc="docs/kv-cache.md", citations=(), markers=None, **changes):
    base = dict(
        id=id, question="what does the kv cache store", doc=doc, evidence="keys and values" if doc else None,
        gold_docs=(doc,) if doc else (), gold_chunks=(GOLD,) if doc else (), answer="The cache stores keys and values [1].",
        markers=tuple(c.n for c in citations) if markers is None else markers, citations=tuple(citations),
        prompt_tokens=900, completion_tokens=40, n_ctx=2048, latency=2.0, time_to_first_token=0.5,
        tokens_per_second=20.0, retrieved=(GOLD,) if doc else (),
    )
    base.update(changes)
    return Record(**base)


# -- the four hand-made cases -------------------------------------------------------------------------------


def test_correct_answer_resolves_is_precise_and_recalled():
    c = citation_metrics([rec(citations=[cite(1)])])
    assert (c["cited"], c["resolved"], c["flagged"]) == (1, 1, 0)
    assert c["flagged_or_resolved"] == 1.0 and c["made_up_rate"] == 0.0
    assert c["precision"] == 1.0 and c["recall"] == 1.0 and c["doc_recall"] == 1.0
    assert c["verdicts"] == {"supported": 1}


def test_made_up_number_is_flagged_and_counted():
    made_up = CitedChunk(7, "made_up")
    records = [rec(answer="Keys and values [1] [7].", citations=[cite(1), made_up])]
    c = citation_metrics(records)
    assert (c["cited"], c["resolved"], c["flagged"], c["made_up"]) == (2, 1, 1, 1)
    assert c["flagged_or_resolved"] == 1.0  # flagged counts: the reader was told
    assert c["made_up_rate"] == 0.5 and c["answers_with_made_up"] == 1
    assert c["precision"] == 1.0  # precision is over resolved citations only
    assert invariant_failures(records, c) == []
    assert "[7] made_up" in problems(records[0])


def test_citation_of_the_wrong_doc_resolves_but_is_neither_precise_nor_recalled():
    records = [rec(citations=[cite(1, chunk="docs/bm25.md#0", gold=False)])]
    c = citation_metrics(records)
    assert c["flagged_or_resolved"] == 1.0
    assert c["precision"] == 0.0 and c["recall"] == 0.0 and c["doc_recall"] == 0.0
    assert "no gold chunk cited" in problems(records[0])


def test_abstentions_score_on_unanswerable_and_count_as_false_on_answerable():
    records = [
        rec(id="u1", doc=None, status="insufficient_evidence", answer="The docs do not cover this."),
        rec(id="u2", doc=None, answer="Use LoRA [1].", citations=[cite(1, chunk="docs/bm25.md#0", gold=False)]),
        rec(id="a1", status="insufficient_evidence", answer="The docs do not cover this."),
        rec(id="a2", citations=[cite(1)]),
    ]
    a = answer_metrics(records)
    assert a["abstention_accuracy"] == 0.5 and a["unanswerable"] == 2
    assert a["false_abstention"] == 0.5 and a["answerable"] == 2
    assert a["status"] == {"insufficient_evidence": 2, "answered": 2}
    c = citation_metrics(records)
    assert c["precision_n"] == 1  # the unanswerable question's citation has no gold to be precise about
    assert c["recall"] == 0.5
    assert "answered an unanswerable question" in problems(records[1])
    assert "false abstention" in problems(records[2])


# -- invariants and thresholds ------------------------------------------------------------------------------


def test_a_number_only_the_checker_saw_still_counts_as_cited():
    c = citation_metrics([rec(markers=(), citations=[cite(1), CitedChunk(4, "made_up")])])
    assert (c["cited"], c["resolved"], c["flagged"], c["made_up_rate"]) == (2, 1, 1, 0.5)


def test_a_number_the_checker_never_reported_breaks_flagged_or_resolved():
    records = [rec(markers=(1, 2), citations=[cite(1)])]
    c = citation_metrics(records)
    assert c["unchecked"] == 1 and c["flagged_or_resolved"] == 0.5
    assert invariant_failures(records, c) == ["1 cited number(s) neither resolved nor flagged"]


@pytest.mark.parametrize("bad", [cite(3, shown=False), cite(3, in_index=False), cite(3, verdict="cited", shown=False)])
def test_a_citation_that_does_not_resolve_but_passed_the_checker_breaks_the_gate(bad):
    records = [rec(citations=[cite(1), bad])]
    c = citation_metrics(records)
    assert c["falsely_passed"] == 1
    assert any("do not resolve were not flagged" in f for f in invariant_failures(records, c))


def test_overflow_crash_and_empty_run_break_the_gate():
    records = [rec(id="big", prompt_tokens=2000, completion_tokens=60), rec(id="boom", status="error", error="ValueError: x")]
    failures = invariant_failures(records, citation_metrics(records))
    assert failures[0] == "1 question(s) crashed, first boom: ValueError: x"
    assert failures[1] == "1 prompt(s) overflowed the context window: big"
    assert cost_metrics(records)["overflows"] == 1
    assert invariant_failures([], citation_metrics([])) == ["no question was run"]


def test_thresholds_report_each_miss_and_pass_when_met():
    c = citation_metrics([rec(citations=[cite(1), cite(2, chunk="docs/bm25.md#0", gold=False), CitedChunk(9, "made_up")])])
    strict = Thresholds(min_recall5=0.9, min_citation_precision=0.6, max_made_up_rate=0.1)
    missed = threshold_failures(strict, 0.8, c)
    assert len(missed) == 3 and "Recall@5 0.800" in missed[0] and "precision 0.500" in missed[1]
    assert threshold_failures(Thresholds(0.8, 0.5, 0.34), 0.8, c) == []
    assert threshold_failures(Thresholds(), None, c) == []


# -- small functions ----------------------------------------------------------------------------------------


def test_percentile_interpolates_between_ranks():
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert percentile([7.0], 95) == 7.0 and percentile([], 50) is None


def test_evidence_overlap_counts_distinct_evidence_words():
    assert evidence_overlap("It keeps the keys [1].", "the keys and the values") == pytest.approx(2 / 4)
    assert evidence_overlap("anything", None) is None


def test_cost_metrics_separate_model_tool_steps_from_agent_searches():
    def search(by_model, error=None):
        return SearchFinished("q", (), (), 0, error=error, by_model=by_model)

    events = [
        ToolStepEvent("<tool_call>{...}", 1),
        search(True, "invalid arguments for search_docs: k: 99 is too big"),
        ToolStepEvent("<tool_call>{...}", 1),
        search(True),
        ToolStepEvent("I think", 0),
    ]
    steps, agent = tool_steps(events)
    assert [s.valid for s in steps] == [0, 1, 0] and agent == 0 and steps[2].text == "I think"
    rescued = events[-1:] + [search(False)]
    assert tool_steps(rescued) == ([steps[2]], 1)  # the agent searched the question: not the model's call
    assert tool_steps([search(False)]) == ([], 1)
    k = cost_metrics([rec(tool_steps=tuple(steps))])
    assert k["tool_steps"] == 3 and k["tool_call_success"] == pytest.approx(1 / 3)


def test_quoted_fallback_markers_count_even_after_an_unclosed_fence():
    model_text = "Folders:\n```markdown\n[1] course\n"
    answer = Answer("q", model_text + "\n\nQuoted from the docs:\n\n> The docs live in five folders. [2]", "answered",
                    quoted=True, model_text=model_text)
    assert shown_markers(answer) == (2,)  # [1] sits in the model's code block; [2] is a citation the fallback made
    ticks = "Use `a [1] and"
    answer = Answer("q", ticks + "\n\nQuoted from the docs:\n\n> Set `k` to 5. [2]", "answered", quoted=True, model_text=ticks)
    assert shown_markers(answer) == (1, 2)  # a code span never crosses a blank line: [1] is outside code
    noted = Answer("q", ticks + "`\n\n(smoldocs: no excerpt supports this answer.)", "insufficient_evidence", model_text=ticks)
    assert shown_markers(noted) == (1,)  # the agent closed the span, yet the model's [1] is what it checked


def test_stratified_sample_is_fixed_spread_and_keeps_two_unanswerable():
    questions = load_questions()
    sample = stratified(questions, 12)
    assert len(sample) == 12 and sum(not q.answerable for q in sample) == 2
    assert sample == stratified(questions, 12)
    positions = [questions.index(q) for q in sample]
    assert positions == sorted(positions) and positions[-1] - positions[0] > len(questions) // 2
    assert stratified(questions, None) == questions and stratified(questions, 1000) == questions


def test_bad_question_line_is_a_one_line_error_naming_the_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "x1", "q": "what?", "doc": null, "evidence": null}\n{"id": "x2"}\n', encoding="utf-8")
    with pytest.raises(UsageError, match=r"q\.jsonl:2: not a question"):
        load_question_file(path)
    with pytest.raises(UsageError, match="cannot read questions file"):
        load_question_file(tmp_path / "missing.jsonl")


# -- records from scripted turns ----------------------------------------------------------------------------


class ListRetriever(RetrieverDefaults):
    """Returns its chunks in order, whatever the query: enough to pin what the eval records."""

    def __init__(self, chunks):
        self.chunks = list(chunks)

    def __len__(self):
        return len(self.chunks)

    def search(self, query, k=5, doc_ids=None):
        return [Hit(c, 1.0) for c in self.chunks if not doc_ids or c.doc_id in doc_ids][:k]

    def chunk(self, chunk_id):
        return next((c for c in self.chunks if c.chunk_id == chunk_id), None)


CHUNKS = [
    Chunk(GOLD, "docs/kv-cache.md", "docs/kv-cache.md", "The kv cache stores keys and values of earlier tokens."),
    Chunk("docs/bm25.md#0", "docs/bm25.md", "docs/bm25.md", "BM25 ranks documents by term frequency."),
]
KV = Question("k1", "what does the kv cache store", "docs/kv-cache.md", "keys and values", "keyword")
LORA = Question("u1", "how do I fine-tune with LoRA", None, None, "unanswerable")


def scripted(*replies):
    model = ScriptedChatModel(list(replies))
    settings = AgentSettings(policy="search-first", fallback=False)
    return ChatSession(model, ListRetriever(CHUNKS), embedder=HashEmbedder(), settings=settings)


def test_records_of_scripted_turns_grade_each_case():
    session = scripted(
        "The kv cache stores keys and values [1].",
        "The kv cache stores keys and values [2].",
        "The kv cache stores keys and values [7].",
        "The docs do not cover this.",
    )
    correct, wrong_doc, made_up = (run_question(session, KV) for _ in range(3))
    abstained = run_question(session, LORA)
    assert correct.gold_chunks == (GOLD,) and correct.citations[0].gold and correct.citations[0].resolved
    assert wrong_doc.citations[0].doc_id == "docs/bm25.md" and not wrong_doc.citations[0].gold
    # [7] is judged (and counted) but never shown: the claim carrying it stays in the unverified draft.
    assert made_up.citations[0].verdict == "made_up" and 7 not in made_up.markers and "[7]" in made_up.model_text
    assert abstained.abstained and abstained.markers == ()
    assert correct.agent_searches == 1 and correct.packed == (1, 2) and correct.queries == (KV.q,)
    assert correct.shown_chunks == (GOLD, "docs/bm25.md#0")
    c = citation_metrics([correct, wrong_doc, made_up, abstained])
    assert c["flagged_or_resolved"] == 1.0 and c["falsely_passed"] == 0
    assert c["precision"] == 0.5 and c["recall"] == pytest.approx(1 / 3) and c["made_up_rate"] == pytest.approx(1 / 3)
    a = answer_metrics([correct, wrong_doc, made_up, abstained])
    assert a["abstention_accuracy"] == 1.0 and a["gold_shown"] == 1.0


def test_a_crashing_turn_becomes_a_failed_record_not_a_crashed_run():
    session = scripted()  # no reply enqueued: the scripted model raises
    record = run_question(session, KV)
    assert record.crashed and "AssertionError" in record.error
    assert invariant_failures([record], citation_metrics([record]))[0].startswith("1 question(s) crashed, first k1")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=6))
def test_every_number_a_scripted_answer_cites_is_resolved_or_flagged(numbers):
    # Numbered claims: identical sentences would read as a looping answer, which the agent cuts short.
    text = " ".join(f"Claim {i}: the kv cache stores keys [{n}]." for i, n in enumerate(numbers))
    record = run_question(scripted(text), KV)
    c = citation_metrics([record])
    assert c["flagged_or_resolved"] == 1.0 and c["falsely_passed"] == 0
    assert c["made_up"] == len({n for n in numbers if n > len(CHUNKS)})


# -- the report ---------------------------------------------------------------------------------------------


def test_report_renders_summary_rows_and_writes_both_files(tmp_path):
    step = ToolRound(calls=1, valid=1, text='<tool_call>{"name": "search_docs"}</tool_call>')
    records = [
        rec(citations=[cite(1)], tool_steps=(step,), queries=("kv cache",)),
        rec(id="u1", doc=None, status="insufficient_evidence", answer="No | pipes"),
    ]
    report = build_report(records, [], {"policy": "search-first", "k": 5, "chunks": 2}, Thresholds())
    assert report["gate"]["ok"] and report["rows"][0]["cites_gold"] is True and report["rows"][1]["cites_gold"] is None
    table = format_terminal(report)
    assert "flagged or resolved" in table and "100.0% (1 resolved, 0 flagged, 0 unchecked)" in table and "Invariants hold." in table
    md = format_markdown(report)
    assert "| q1 | answered | yes |" in md and "### u1:" in md and "> No | pipes" in md
    assert "Tool step (1 valid of 1 calls): `<tool_call>" in md and "Searched: `kv cache`" in md
    json_path, md_path = write_report(tmp_path / "out", report)
    assert [Record.from_json(row) for row in json.loads(json_path.read_text())["rows"]] == records
    assert json.loads(json_path.read_text())["rows"][0]["id"] == "q1" and md_path.read_text().startswith("# smoldocs eval")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.json", "report.md"]


def test_settings_from_args_apply_only_the_given_overrides():
    from agent.cli import parse
    from agent.eval.main import agent_settings

    command = parse(["eval", "--tools", "model", "--decoding", "constrained", "--no-fallback", "--k", "3",
                     "--temperature", "0", "--max-tokens", "64"])
    s = agent_settings(command.settings, command.options)
    assert (s.policy, s.decoding, s.fallback, s.k) == ("model", "constrained", False, 3)
    assert (s.generation.temperature, s.generation.max_tokens) == (0.0, 64)
    assert s.generation.repeat_penalty == AgentSettings().generation.repeat_penalty


def test_user_mistakes_are_one_line_errors_before_any_model_loads(tmp_path, capsys):
    from agent.cli import main

    a_file = tmp_path / "taken"
    a_file.write_text("x", encoding="utf-8")
    assert main(["eval", "--out", str(a_file)]) == 2
    assert main(["eval", "--questions", str(tmp_path / "nope.jsonl")]) == 2
    assert main(["eval", "--docs", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("smoldocs: error: ") for line in err)
    assert "is a file" in err[0] and "cannot read questions file" in err[1] and "pass --questions FILE" in err[2]


@pytest.mark.parametrize("no_model", [False, True])
def test_an_out_folder_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys, monkeypatch, no_model):
    from agent.cli import main
    from agent.surfaces.commands import common

    def load(*args, **kwargs):
        raise AssertionError("a model or index was loaded before --out was checked")

    for name in ("open_chat_model", "load_tokenizer_from_args", "load_embedder_from_args", "open_index_from_args"):
        monkeypatch.setattr(common, name, load)
    a_file = tmp_path / "taken"
    a_file.write_text("x", encoding="utf-8")
    for out in ("/proc/smoldocs-report", str(a_file / "sub")):
        assert main(["eval", "--limit", "2", "--out", out, *(["--no-model"] if no_model else [])]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"--out {out} cannot be written" in err and "give a folder you can write" in err, err


def test_a_report_that_fails_to_write_after_the_run_is_one_line_and_leaves_no_half_file(tmp_path, monkeypatch):
    import errno

    from agent.eval import report as report_module

    real_mkstemp = report_module.tempfile.mkstemp

    def full_disk(*args, prefix="", **kwargs):
        if "report.md" in prefix:  # report.json is written; the disk fills before report.md
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_mkstemp(*args, prefix=prefix, **kwargs)

    monkeypatch.setattr(report_module.tempfile, "mkstemp", full_disk)
    (tmp_path / "report.md").write_text("the last run's report\n")
    report = build_report([], [], {}, Thresholds())
    with pytest.raises(UsageError, match="could not write the report to .*No space left on device") as err:
        write_report(tmp_path, report)
    assert "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]  # no new report.json beside it, no temp file


class _Stream:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, text):
        self.text += text

    def flush(self):
        pass


@pytest.mark.parametrize("tty, wanted, expect", [
    (True, None, "live"), (True, True, "live"), (False, True, "lines"), (False, None, ""), (True, False, ""),
])
def test_progress_is_a_live_bar_on_a_terminal_and_lines_only_when_asked(tty, wanted, expect):
    from agent.eval.main import QuestionProgress

    stream = _Stream(tty)
    bar = QuestionProgress(stream, wanted)
    bar(1, 4, rec(citations=[cite(1)]))
    bar.close()
    if expect == "live":
        assert "asking [######..................] 1/4 questions" in stream.text and stream.text.endswith("\r\033[K")
    elif expect == "lines":
        assert stream.text == "1/4 q1 answered 2.0 s  ok\n"
    else:
        assert stream.text == ""


def test_decoding_options_and_no_constrained_shorthand(capsys):
    from agent.cli import main, parse
    from agent.eval.main import agent_settings

    def decoding(argv):
        command = parse(argv)
        return agent_settings(command.settings, command.options).decoding

    assert decoding(["eval"]) == "auto"
    assert decoding(["eval", "--decoding", "guarded"]) == "guarded"
    with pytest.raises(SystemExit) as exited:  # the old shorthand is gone: argparse's usage error
        main(["eval", "--constrained", "--limit", "2"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "unrecognized arguments: --constrained" in err
