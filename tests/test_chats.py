"""Saved chats: append-only event logs that survive a kill, list, resume and export to Markdown."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.chats import (
    ChatStore,
    ChatStoreError,
    answer_from_dict,
    answer_to_dict,
    event_from_dict,
    event_to_dict,
)
from agent.events import (
    Answer,
    AnswerFinished,
    ErrorEvent,
    SearchFinished,
    SearchStarted,
    TextDelta,
    TurnStarted,
    shown_hits,
)
from rag.excerpts.packing import Omission
from rag.verification.verdicts import CitationVerdict, ClaimVerdict, Verdict
from rag.types import Hit
from tui_support import CHUNKS, mixed_turn


def test_every_event_type_round_trips_through_json():
    events = [*mixed_turn(), ErrorEvent("generation failed: boom", fatal=True)]
    for event in events:
        data = json.loads(json.dumps(event_to_dict(event)))
        back = event_from_dict(data)
        assert back == event
        if isinstance(event, SearchFinished):
            assert back.omissions[0].rank == 4 and back.omissions[0].why == "over budget"


verdicts = st.sampled_from(list(Verdict))
citations = st.builds(
    CitationVerdict,
    n=st.integers(1, 30),
    chunk_id=st.one_of(st.none(), st.text(max_size=20)),
    doc_id=st.one_of(st.none(), st.text(max_size=20)),
    uri=st.one_of(st.none(), st.text(max_size=20)),
    verdict=verdicts,
    support=st.one_of(st.none(), st.floats(0, 1)),
    evidence=st.one_of(st.none(), st.text(max_size=40)),
)
claims = st.builds(
    ClaimVerdict,
    text=st.text(max_size=40),
    citations=st.lists(st.integers(1, 30), max_size=3).map(tuple),
    verdict=verdicts,
    support=st.one_of(st.none(), st.floats(0, 1)),
)
answers = st.builds(
    Answer,
    question=st.text(max_size=60),
    text=st.text(max_size=200),
    status=st.sampled_from(["answered", "insufficient_evidence", "cancelled", "error"]),
    citations=st.lists(citations, max_size=4).map(tuple),
    claims=st.lists(claims, max_size=4).map(tuple),
    quoted=st.booleans(),
    completion_tokens=st.integers(0, 2048),
    tokens_per_second=st.floats(0, 500),
)


@settings(max_examples=60, deadline=None)
@given(answers)
def test_any_answer_round_trips_exactly(answer):
    assert answer_from_dict(json.loads(json.dumps(answer_to_dict(answer)))) == answer


def test_fields_from_a_newer_version_are_ignored():
    data = {**answer_to_dict(Answer("q", "a [1]", "answered")), "mood": "cheerful"}
    assert answer_from_dict(data) == Answer("q", "a [1]", "answered")
    assert event_from_dict({"type": "SomethingNew", "x": 1}) is None


def record_turn(log, events):
    for event in events:
        log.record(event)


def test_a_chat_lists_with_its_first_question_as_title(tmp_path):
    store = ChatStore(tmp_path)
    with store.create(docs_dir="docs_corpus", model="m") as log:
        record_turn(log, mixed_turn("first question"))
        record_turn(log, mixed_turn("second question"))
    with store.create() as other:
        record_turn(other, mixed_turn("another chat"))
    infos = store.list_chats()
    assert {i.title for i in infos} == {"first question", "another chat"}
    first = next(i for i in infos if i.title == "first question")
    assert first.turns == 2
    chat = store.load(first.chat_id)
    assert [t.question for t in chat.turns] == ["first question", "second question"]
    assert chat.turns[1].answer == mixed_turn("second question")[-1].answer
    assert chat.meta["docs_dir"] == "docs_corpus"


def test_each_line_is_on_disk_as_soon_as_it_is_recorded(tmp_path):
    store = ChatStore(tmp_path)
    log = store.create()
    log.record(TurnStarted("q", 0, "search-first"))
    log.record(TextDelta("The kv "))
    # Read by another reader while the log is still open: nothing is buffered.
    lines = log.path.read_text().splitlines()
    assert json.loads(lines[-1]) == {"type": "TextDelta", "text": "The kv "}
    log.close()


def test_a_kill_mid_answer_keeps_what_streamed_marked_cancelled(tmp_path):
    store = ChatStore(tmp_path)
    log = store.create()
    record_turn(log, [TurnStarted("what is bm25", 0, "search-first"), TextDelta("BM25 ranks "), TextDelta("documents")])
    log.close()
    with open(log.path, "ab") as f:
        f.write(b'{"type": "TextDelta", "te')  # the token in flight when the process died
    turn = store.load(log.chat_id).turns[0]
    assert turn.answer.status == "cancelled"
    assert turn.answer.draft == "BM25 ranks documents" and turn.answer.text == ""  # kept, never as the answer
    assert isinstance(turn.complete_events[-1], AnswerFinished)


def test_appending_after_a_torn_line_starts_a_clean_line(tmp_path):
    store = ChatStore(tmp_path)
    log = store.create()
    record_turn(log, [TurnStarted("q1", 0, "search-first"), TextDelta("partial")])
    log.close()
    with open(log.path, "ab") as f:
        f.write(b'{"type": "Te')
    resumed = store.reopen(log.chat_id)
    record_turn(resumed, mixed_turn("q2"))
    resumed.close()
    chat = store.load(log.chat_id)
    assert [t.question for t in chat.turns] == ["q1", "q2"]
    assert chat.turns[1].answer.status == "answered"


def test_a_damaged_middle_line_is_listed_with_the_turns_before_it(tmp_path):
    store = ChatStore(tmp_path)
    with store.create() as log:
        record_turn(log, mixed_turn("first"))
        record_turn(log, mixed_turn("second"))
    lines = log.path.read_text().splitlines()
    second = next(i for i, line in enumerate(lines) if '"second"' in line)
    lines[second + 1] = "not json"
    log.path.write_text("\n".join(lines) + "\n")
    [info] = store.list_chats()  # listed, not hidden (tests/faults/test_damaged_chats.py has every kind)
    assert info.damaged_after == 1 and info.damage == f"line {second + 2} is not readable JSON"
    assert [t.question for t in store.load(log.chat_id).turns] == ["first"]


def test_a_note_between_turns_loads_after_the_turns_before_it_and_stays_out_of_them(tmp_path):
    """A switch's line is a `note` record of its own: the turns' events, answers and the chat's text are unchanged."""
    store = ChatStore(tmp_path)
    with store.create() as log:
        log.note("⇄ Switched the model to other; the chat goes on with it.")
        record_turn(log, mixed_turn("first"))
        log.note("⇄ Switched the docs folder to /notes (4 chunks); the chat goes on over it.")
        record_turn(log, mixed_turn("second"))
    chat = store.load(log.chat_id)
    assert [(n.after, n.text[:22]) for n in chat.notes] == [(0, "⇄ Switched the model t"), (1, "⇄ Switched the docs fo")]
    assert [t.question for t in chat.turns] == ["first", "second"] and chat.info.damaged_after is None
    assert chat.turns[1].events == mixed_turn("second") and "Switched" not in chat.info.text


def test_a_note_that_is_not_text_is_damage_and_the_turns_before_it_load(tmp_path):
    store = ChatStore(tmp_path)
    with store.create() as log:
        record_turn(log, mixed_turn("first"))
    with open(log.path, "a") as f:
        f.write('{"type": "note", "text": 7}\n')
    [info] = store.list_chats()
    assert info.damaged_after == 1 and info.damage.endswith("is a damaged note")


def test_an_unknown_chat_id_says_where_to_look(tmp_path):
    with pytest.raises(ChatStoreError, match="Ctrl\\+O"):
        ChatStore(tmp_path).load("20240101-000000-abcdef")
    with pytest.raises(ChatStoreError):
        ChatStore(tmp_path).load("../../etc/passwd")


def test_shown_hits_pair_ledger_numbers_with_the_kept_hits():
    hits = tuple(Hit(c, 1.0) for c in CHUNKS[:3])
    # The second hit was dropped, so the kept ones are the first and the third.
    event = SearchFinished("q", hits, packed=(4, 5), dropped=1, omissions=(Omission(2, hits[1].chunk_id, hits[1].uri, "over_budget"),))
    shown = shown_hits([SearchStarted("q", 5), event])
    assert {n: h.chunk_id for n, h in shown.items()} == {4: CHUNKS[0].chunk_id, 5: CHUNKS[2].chunk_id}


def test_a_saved_hit_is_one_flat_dict_as_before_hit_wrapped_its_chunk():
    """Saved chats and `ask --json` keep the keys and their order; a chat saved before reads back the same."""
    hit = Hit(CHUNKS[1], 0.5, bm25_rank=2, dense_rank=None, outdated=True, collection="notes")
    saved = json.loads(json.dumps(event_to_dict(SearchFinished("q", (hit,), packed=(1,), dropped=0))))["hits"][0]
    assert list(saved) == ["chunk_id", "doc_id", "uri", "text", "score", "heading_path", "line_start", "line_end",
                           "page_start", "page_end", "bm25_rank", "dense_rank", "outdated", "expires", "collection"]
    assert saved["chunk_id"] == CHUNKS[1].chunk_id and saved["heading_path"] == list(CHUNKS[1].heading_path)
    back = event_from_dict({"type": "SearchFinished", "query": "q", "hits": [saved], "packed": [1], "dropped": 0})
    assert isinstance(back, SearchFinished) and back.hits == (hit,) and back.hits[0].chunk == CHUNKS[1]


def test_export_has_footnotes_with_path_lines_heading_and_flags_made_up_numbers(tmp_path):
    store = ChatStore(tmp_path / "chats")
    with store.create(docs_dir="docs_corpus", model="SmolLM2") as log:
        record_turn(log, mixed_turn("What does the kv cache store?"))
    path = store.export(log.chat_id, tmp_path / "out" / "chat.md")
    text = path.read_text()
    assert text.startswith("# What does the kv cache store?")
    assert "earlier tokens [^1], so" in text
    assert "[^1]: docs/kv-cache.md lines 1-6, KV cache — supported" in text
    assert "[^2]: docs/kv-cache.md lines 8-14, KV cache > Size — weak support" in text
    assert "[^3]: docs/sampling.md lines 3-11, Sampling > Temperature — unsupported" in text
    assert "9000 GB on disk [7?]" in text and "[^4]" not in text
    assert "**Made-up citation:** [7]" in text
    assert [p.name for p in path.parent.iterdir()] == ["chat.md"]  # no temp file left behind


def test_export_numbers_footnotes_across_turns(tmp_path):
    store = ChatStore(tmp_path)
    with store.create() as log:
        record_turn(log, mixed_turn("one"))
        record_turn(log, mixed_turn("two"))
    text = store.export(log.chat_id).read_text()
    # Each turn has its own ledger [1].. [3]; the export gives them distinct footnotes 1-6.
    assert text.count("[^6]:") == 1 and "[^7]" not in text
    assert store.export(log.chat_id).parent.name == "exports"


def test_a_chat_saved_before_typed_verdicts_still_loads(tmp_path):
    # Written by smoldocs 7110f19: verdicts as strings, an Answer.trace list, omissions as dicts, no ToolStep events.
    fixture = Path(__file__).parent / "data" / "chats" / "saved-7110f19.jsonl"
    (tmp_path / fixture.name).write_bytes(fixture.read_bytes())
    store = ChatStore(tmp_path)
    (info,) = store.list_chats()
    chat = store.load(info.chat_id)
    assert [t.question for t in chat.turns] == [
        "what does the kv cache store", "how does bm25 rank documents", "what does temperature do to the logits before sampling"
    ]
    first = chat.turns[0].answer
    assert first.verdicts()[7] is Verdict.MADE_UP and first.unknown == (7,)
    assert all(isinstance(c.verdict, Verdict) for t in chat.turns for c in t.answer.citations)
    assert chat.turns[2].answer.stop_reason == "the answer started repeating itself"
    assert shown_hits(chat.turns[0].events)[1].chunk_id == "docs/kv-cache.md#0"
    text = store.export(info.chat_id).read_text()
    assert "[7?]" in text and "[^1]: docs/kv-cache.md" in text


def test_export_footnotes_markers_but_not_links_or_code(tmp_path):
    store = ChatStore(tmp_path)
    turn = mixed_turn("q")
    answer = turn[-1].answer
    text = "See [the guide](http://x) and [1](http://y), code `a[2]`, then a citation [1]."
    with store.create() as log:
        record_turn(log, [*turn[:-1], AnswerFinished(dataclasses.replace(answer, text=text))])
    out = store.export(log.chat_id).read_text()
    assert "[1](http://y)" in out and "`a[2]`" in out and "a citation [^1]." in out


def test_citations_whose_source_changed_or_vanished_are_stale(tmp_path):
    from agent.chats import stale_citations

    turn = mixed_turn("q")
    answer = turn[-1].answer
    index = {c.chunk_id: c for c in CHUNKS}
    assert stale_citations(answer, turn, index.get) == {}
    changed = {**index, CHUNKS[0].chunk_id: dataclasses.replace(CHUNKS[0], text="something else entirely")}
    del changed[CHUNKS[1].chunk_id]
    # [1] changed, [2] vanished, [3] as shown, [7] made up: cites nothing, never stale.
    assert stale_citations(answer, turn, changed.get) == {1: "changed", 2: "vanished"}
    reflowed = {**index, CHUNKS[0].chunk_id: dataclasses.replace(CHUNKS[0], text="  " + CHUNKS[0].text.replace(" ", "\n"))}
    assert stale_citations(answer, turn, reflowed.get) == {}  # whitespace is not a change


def test_exports_mark_stale_citations_in_markdown_and_json(tmp_path):
    store = ChatStore(tmp_path)
    with store.create() as log:
        record_turn(log, mixed_turn("what does the kv cache store"))
    index = {c.chunk_id: c for c in CHUNKS}
    index[CHUNKS[0].chunk_id] = dataclasses.replace(CHUNKS[0], text="rewritten since")
    md = store.export(log.chat_id, tmp_path / "out.md", lookup=index.get).read_text()
    assert md.count("**stale**") == 1 and "the source text has changed since this answer" in md
    data = json.loads(store.export(log.chat_id, tmp_path / "out.json", lookup=index.get).read_text())
    (turn,) = data["turns"]
    assert turn["stale"] == {"1": "changed"} and turn["answer"]["unknown"] == [7]
    assert turn["answer"]["citations"][0]["verdict"] == "supported"


def test_export_refuses_an_existing_file_unless_told_to_replace_it(tmp_path):
    from agent.errors import UsageError

    store = ChatStore(tmp_path / "chats")
    with store.create() as log:
        record_turn(log, mixed_turn("one"))
    mine = tmp_path / "notes.md"
    mine.write_text("my own notes\n")
    with pytest.raises(UsageError, match=r"notes\.md already exists: add --force to replace it"):
        store.export(log.chat_id, mine)
    assert mine.read_text() == "my own notes\n"
    assert store.export(log.chat_id, mine, overwrite=True).read_text().startswith("# one")
    first = store.export(log.chat_id)  # the exports folder is smoldocs' own: exporting again brings it up to date
    assert store.export(log.chat_id) == first


@pytest.mark.parametrize("where", ["proc", "under a file"])
def test_an_export_that_cannot_be_written_is_one_line_naming_the_users_path(tmp_path, where):
    from agent.chats.store import ChatStoreError

    store = ChatStore(tmp_path / "chats")
    with store.create() as log:
        record_turn(log, mixed_turn("one"))
    (tmp_path / "afile").write_text("x")
    dest = Path("/proc/x.md") if where == "proc" else tmp_path / "afile" / "x.md"
    with pytest.raises(ChatStoreError) as raised:
        store.export(log.chat_id, dest)
    message = str(raised.value)
    assert message.startswith(f"cannot write {dest}: ") and "\n" not in message
    assert ".tmp" not in message and "Errno" not in message


SWITCHED_MODEL = "⇄ Switched the model to other; the chat goes on with it."
SWITCHED_DOCS = "⇄ Switched the docs folder to /notes (4 chunks); the chat goes on over it."


def test_exports_carry_each_note_between_the_turns_it_came_between(tmp_path):
    """Issue 39: Markdown shows a note as an italic line where it happened; JSON adds `notes`, turns unchanged."""
    store = ChatStore(tmp_path / "chats")
    with store.create() as log:
        log.note(SWITCHED_MODEL)
        record_turn(log, mixed_turn("first"))
        log.note(SWITCHED_DOCS)
        record_turn(log, mixed_turn("second"))
        log.note("⇄ Switched the model to last; the chat goes on with it.")
    md = store.export(log.chat_id, tmp_path / "out.md").read_text()
    order = [f"_{SWITCHED_MODEL}_\n", "## first", f"_{SWITCHED_DOCS}_\n", "## second",
             "_⇄ Switched the model to last; the chat goes on with it._\n", "[^1]: "]
    places = [md.find(part) for part in order]
    assert -1 not in places and places == sorted(places), md
    data = json.loads(store.export(log.chat_id, tmp_path / "out.json").read_text())
    assert data["notes"] == [{"after": 0, "text": SWITCHED_MODEL}, {"after": 1, "text": SWITCHED_DOCS},
                             {"after": 2, "text": "⇄ Switched the model to last; the chat goes on with it."}]
    assert [t["question"] for t in data["turns"]] == ["first", "second"]
    assert list(data) == ["chat_id", "title", "meta", "turns", "notes"]  # additive: every key before stays


def test_a_note_quoting_a_folder_name_neither_drives_a_terminal_nor_breaks_the_markdown(tmp_path):
    """A folder name in a note can hold an escape sequence, a line break or Markdown: all shown as plain text."""
    store = ChatStore(tmp_path / "chats")
    name = "/tmp/my_docs[^1]\x1b]52;c;aGk=\x07\nsecond line"
    with store.create() as log:
        record_turn(log, mixed_turn("first"))
        log.note(f"⇄ Switched the docs folder to {name} (4 chunks); the chat goes on over it.")
    md = store.export(log.chat_id, tmp_path / "out.md").read_text()
    [line] = [line for line in md.splitlines() if "Switched" in line]
    assert line == (r"_⇄ Switched the docs folder to /tmp/my\_docs\[^1\]\\x1b\]52;c;aGk=\\x07\\nsecond line"
                    " (4 chunks); the chat goes on over it._")
    assert "\x1b" not in md and "\x07" not in md
    data = json.loads(store.export(log.chat_id, tmp_path / "out.json").read_text())
    assert data["notes"][0]["text"] == (r"⇄ Switched the docs folder to /tmp/my_docs[^1]\x1b]52;c;aGk=\x07\nsecond line"
                                        " (4 chunks); the chat goes on over it.")


def test_a_question_with_an_escape_sequence_or_a_line_break_stays_one_plain_heading(tmp_path):
    """Issue 39: a typed question is cleaned as the notes are: controls and line breaks escaped visibly, Markdown
    escaped, so it can neither drive a terminal showing the file nor start a heading or a footnote of its own."""
    store = ChatStore(tmp_path / "chats")
    question = "why is `n_ctx`\x1b[2J red?\n# Forged heading\n[^1]: forged footnote"
    with store.create(docs_dir="docs\x1b]52;c;aGk=\x07\nx", model="SmolLM2") as log:
        record_turn(log, mixed_turn(question))
    md = store.export(log.chat_id, tmp_path / "out.md").read_text()
    plain = r"why is \`n\_ctx\`\\x1b\[2J red?\\n# Forged heading\\n\[^1\]: forged footnote"
    lines = md.splitlines()
    assert lines[0] == f"# {plain}" and f"## {plain}" in lines
    assert r"docs: `docs\x1b]52;c;aGk=\x07\nx`" in lines[2]
    assert "\x1b" not in md and "\x07" not in md
    assert not [line for line in lines if line.startswith(("# Forged", "[^1]: forged"))]
    assert json.loads(store.export(log.chat_id, tmp_path / "out.json").read_text())["turns"][0]["question"] == question


@pytest.mark.parametrize("suffix", [".md", ".json"])
def test_an_export_without_notes_is_byte_for_byte_what_it_was_before_notes(tmp_path, suffix):
    """Pinned: the exports of the chat saved by 7110f19, written by the code before issue 39 (at 9717acd)."""
    data = Path(__file__).parent / "data" / "chats"
    (tmp_path / "saved-7110f19.jsonl").write_bytes((data / "saved-7110f19.jsonl").read_bytes())
    store = ChatStore(tmp_path)
    assert store.load("saved-7110f19").notes == []
    expected = (data / f"saved-7110f19.export{suffix}").read_bytes()
    # The pin's "saved" stamp is in UTC; the export writes local time.
    stamp = datetime.fromtimestamp(store.load("saved-7110f19").info.created).strftime("%Y-%m-%d %H:%M")
    expected = expected.replace(b"saved 2026-12-01 07:15", f"saved {stamp}".encode())
    assert store.export("saved-7110f19", tmp_path / f"out{suffix}").read_bytes() == expected
