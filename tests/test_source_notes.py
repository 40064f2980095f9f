"""Issue 19 on the agent side: conflict notes in the answer, ask --json, the TUI and the eval; [outdated] excerpts."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from textual.widgets import Static

from agent.chats import ChatStore, answer_from_dict, answer_to_dict
from agent.eval.metrics import problems, source_metrics
from agent.eval.records import CitedChunk, Record
from agent.events import AnswerFinished
from agent.session import ChatSession
from agent.settings import AgentSettings
from agent.surfaces.tui import make_app
from fakes import HashEmbedder, ScriptedChatModel
from rag.excerpts.packing import Omission
from rag.ingest.sources import source_info
from rag.types import Chunk, Hit
from rag.verification.verdicts import Verdict
from test_agent_loop import MemoryRetriever
from test_tui import ask, ready
from tui_support import pilot_test
from json_support import read_output

OLD = Chunk("archive/defaults.md#0", "archive/defaults.md", "archive/defaults.md",
            "In 2023 the course default context window was 512 tokens.", ("Defaults",), 1, 3)
NEW = Chunk("docs/windows.md#0", "docs/windows.md", "docs/windows.md",
            "The course default context window is 2048 tokens.", ("The course defaults",), 1, 3)
OTHER = Chunk("docs/kv.md#0", "docs/kv.md", "docs/kv.md",
              "The kv cache of the course model takes 45 MB at the default context window.", ("KV cache",), 1, 3)


class StandingRetriever(MemoryRetriever):
    """MemoryRetriever whose hits carry their document's standing, as HybridIndex's do."""

    def search(self, query, k=5, doc_ids=None):
        return [
            Hit(self.by_id[h.chunk_id], h.score, outdated=source_info(h.doc_id).outdated)
            for h in super().search(query, k, doc_ids)
        ]


def session_over(chunks, replies):
    model = ScriptedChatModel(replies)
    settings = AgentSettings(policy="search-first", fallback=False)
    return ChatSession(model, StandingRetriever(chunks), embedder=HashEmbedder(), settings=settings), model


def answer_of(session, question):
    return next(e.answer for e in session.ask(question) if isinstance(e, AnswerFinished))


def test_disagreeing_excerpts_give_a_conflict_note_and_the_outdated_one_is_tagged_for_the_model():
    session, model = session_over([NEW, OLD, OTHER], ["The default context window is 2048 tokens [1]."])
    answer = answer_of(session, "what is the course default context window")
    prompt = "\n".join(m["content"] for m in model.calls[-1])
    assert "archive/defaults.md [outdated]\n" in prompt and "docs/windows.md\n" in prompt
    (conflict,) = answer.conflicts
    assert conflict["unit"] == "token" and len(conflict["outdated"]) == 1
    assert {v["value"] for v in conflict["values"]} == {"2048 tokens", "512 tokens"}
    assert conflict["note"].startswith("The sources disagree on ") and "(outdated)" in conflict["note"]
    printed = json.loads(json.dumps(answer_to_dict(answer)))  # what ask --json prints and chats save
    assert printed["conflicts"] == list(answer.conflicts)
    assert answer_from_dict(printed).conflicts == answer.conflicts


def test_agreeing_excerpts_give_no_note():
    session, _ = session_over([NEW, OTHER], ["The default context window is 2048 tokens [1]."])
    assert answer_of(session, "what is the course default context window").conflicts == ()


def test_a_conflict_detection_failure_answers_without_a_note(monkeypatch):
    import rag.excerpts.conflicts

    def boom(excerpts):
        raise RuntimeError("detector bug")

    monkeypatch.setattr(rag.excerpts.conflicts, "detect_conflicts", boom)
    session, _ = session_over([NEW, OLD], ["The default context window is 2048 tokens [1]."])
    answer = answer_of(session, "what is the course default context window")
    assert answer.status == "answered" and answer.conflicts == ()


def test_the_ask_command_prints_the_note(monkeypatch, capsys):
    from agent.surfaces.commands import ask as ask_command

    session, _ = session_over([NEW, OLD], ["The default context window is 2048 tokens [1]."])
    answer = answer_of(session, "what is the course default context window")
    ask_command.print_answer(answer, session, already_streamed=False)
    assert "Note: The sources disagree on " in capsys.readouterr().out


@pilot_test
async def test_the_tui_shows_the_conflict_note_under_the_answer(tmp_path):
    session, _ = session_over([NEW, OLD], ["The default context window is 2048 tokens [1]."])
    async with make_app(lambda progress=None: session, ChatStore(tmp_path / "chats")).run_test(size=(100, 32)) as pilot:
        await ready(pilot)
        view = await ask(pilot, "what is the course default context window")
        (note,) = view.query(".conflict-note").results(Static)
        text = str(note.content)
        assert text.startswith("⚠ The sources disagree on ") and "512 tokens" in text and "(outdated)" in text
    session2, _ = session_over([NEW, OTHER], ["The default context window is 2048 tokens [1]."])
    async with make_app(lambda progress=None: session2, ChatStore(tmp_path / "c2")).run_test(size=(100, 32)) as pilot:
        await ready(pilot)
        view = await ask(pilot, "what is the course default context window")
        assert not view.query(".conflict-note")


def test_a_near_duplicate_omission_reads_with_its_twin_number_and_survives_a_saved_chat():
    from agent.chats import event_from_dict, event_to_dict
    from agent.events import SearchFinished

    o = Omission(3, "docs/b.md#0", "docs/b.md", "near_duplicate", duplicate_of=1)
    assert o.why == "near-duplicate of [1]"
    event = SearchFinished("q", (), packed=(1,), dropped=1, omissions=(o,))
    back = event_from_dict(json.loads(json.dumps(event_to_dict(event))))
    assert back.omissions == (o,) and back.omissions[0].why == "near-duplicate of [1]"


def record(id_, tags=(), conflicts=(), cited=(), shown=(), shown_outdated=(), status="answered") -> Record:
    return Record(id=id_, question="q", doc="docs/a.md", tags=tuple(tags), conflicts=tuple(conflicts),
                  citations=tuple(cited), shown_chunks=tuple(shown), shown_outdated=tuple(shown_outdated),
                  status=status, markers=tuple(c.n for c in cited))


def cited(n, chunk, outdated):
    return CitedChunk(n, Verdict.SUPPORTED, chunk, chunk.split("#")[0], in_index=True, shown=True, outdated=outdated)


def test_source_metrics_count_notes_by_tag_and_outdated_only_citations():
    note = {"note": "The sources disagree on x: 1 token [1]; 2 tokens [2]."}
    records = [
        record("c1", ["conflict"], [note]),
        record("c2", ["conflict", "outdated"]),  # missed
        record("o1", [], [note]),  # a note where none was expected
        record("o2"),
        record("o3", cited=[cited(2, "archive/a.md#0", True)], shown=["docs/b.md#0", "archive/a.md#0"],
               shown_outdated=["archive/a.md#0"]),  # only the outdated page, a current one shown: bad
        record("o4", cited=[cited(1, "docs/b.md#0", False), cited(2, "archive/a.md#0", True)],
               shown=["docs/b.md#0", "archive/a.md#0"], shown_outdated=["archive/a.md#0"]),  # both: fine
        record("o5", cited=[cited(1, "archive/a.md#0", True)], shown=["archive/a.md#0"],
               shown_outdated=["archive/a.md#0"]),  # no current page was shown: not counted
    ]
    about_old = replace(records[4], id="o6", doc="archive/a.md")  # "what did the 2023 notes say?": not counted
    records.append(about_old)
    m = source_metrics(records)
    assert (m["conflict_noted"], m["conflict_questions"], m["conflict_note_rate"]) == (1, 2, 0.5)
    assert (m["other_noted"], m["other_questions"]) == (1, 6)
    assert (m["cite_outdated_only"], m["cite_outdated"], m["outdated_only_rate"]) == (1, 2, 0.5)
    assert "no conflict note" in problems(records[1])
    assert "cites only the outdated page although a current one was shown" in problems(records[4])
    assert not any("outdated" in p for p in problems(records[5])) and not any("outdated" in p for p in problems(about_old))


def test_records_keep_conflicts_tags_and_outdated_through_json():
    r = record("c1", ["conflict"], [{"note": "n", "numbers": [1, 2]}], cited=[cited(1, "archive/a.md#0", True)],
               shown=["archive/a.md#0"], shown_outdated=["archive/a.md#0"])
    back = Record.from_json(json.loads(json.dumps(r.to_json())))
    assert back == r


@pytest.mark.parametrize("value", ["0", "1.5", "-1", "high"])
def test_pack_refuses_a_bad_jaccard_threshold(capsys, value):
    from agent.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["pack", "kv cache", "--jaccard-threshold", value])
    assert exit_.value.code == 2
    assert "--jaccard-threshold: expected a number above 0 and at most 1, or off" in capsys.readouterr().err


@pytest.mark.real
def test_real_index_marks_the_archive_page_and_the_probe_notes_the_conflicts(real_index, real_tokenizer):
    from agent.eval.runner import probe_questions
    from rag.evaluation import load_questions

    assert real_index.source("archive/context-defaults-2023.md").outdated
    assert not real_index.source("docs/context-windows.md").outdated
    questions = [q for q in load_questions() if q.id in {"c001", "c002", "c003", "c004", "a005", "a007"}]
    records = {r.id: r for r in probe_questions(real_index, real_tokenizer, questions, AgentSettings())}
    for qid in ("c001", "c002", "c003", "c004"):
        assert records[qid].shown_outdated, qid  # the archive page is among the excerpts ...
        assert set(records[qid].shown_chunks) - set(records[qid].shown_outdated), qid  # ... beside a current one
        assert any("512 tokens" in c["note"] or "128 tokens" in c["note"] for c in records[qid].conflicts), qid
    assert not records["a005"].conflicts and not records["a007"].conflicts


@pytest.mark.real
def test_real_pack_command_tags_the_outdated_excerpt_and_reports_the_conflict(real_index, capsys):
    from agent.cli import main

    question = "Should my labs use a 512-token or a 2048-token context window?"
    assert main(["pack", question, "--json"]) == 0
    report = read_output("pack", capsys.readouterr().out)
    outdated = [c for c in report["citations"] if c["outdated"]]
    assert outdated and all(c["doc_id"].startswith("archive/") for c in outdated)
    assert f"[{outdated[0]['n']}] {outdated[0]['uri']} [outdated]\n" in report["text"]
    assert report["conflicts"] and outdated[0]["n"] in report["conflicts"][0]["outdated"]
    assert report["hits_in"] == report["hits_out"] + sum(report["dropped"].values())
    assert main(["pack", question, "--json", "--current-only"]) == 0
    current = read_output("pack", capsys.readouterr().out)
    assert not any(c["outdated"] for c in current["citations"]) and current["conflicts"] == []
