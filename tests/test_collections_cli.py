"""Several sources from the command line and the settings file: search, ask and MCP's search_docs, with the
collection filter, over real folders with the real tokenizer and MiniLM (and SmolLM2-135M for ask)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli import main
from agent.surfaces.commands import common
from json_support import read_output
from mcp_support import excerpts, mcp_client

pytestmark = pytest.mark.real


def write(folder, files: dict[str, str]):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(folder)


@pytest.fixture
def folders(tmp_path):
    notes = write(tmp_path / "notes", {
        "README.md": "# Notes\n\nThe backup of the photo library runs every Sunday night to the grey disk.\n",
        "garden.md": "# Garden\n\nWater the tomatoes twice a week in July; the basil wants shade.\n",
    })
    project = write(tmp_path / "project", {
        "README.md": "# Project\n\nThe backup server listens on port 8443 and rotates its logs at midnight.\n",
    })
    return notes, project


@pytest.fixture
def real_models(monkeypatch, real_tokenizer, real_embedder):
    monkeypatch.setattr(common, "load_tokenizer_from_args", lambda args: real_tokenizer)
    monkeypatch.setattr(common, "load_embedder_from_args", lambda args: real_embedder)


def search_json(capsys, *argv: str) -> dict:
    assert main(["search", *argv, "--json"]) == 0
    return read_output("search", capsys.readouterr().out)


def test_search_over_two_folders_names_each_hit_and_filters_by_collection(real_models, folders, capsys):
    notes, project = folders
    both = search_json(capsys, "backup", "--docs", notes, "--docs", project, "-k", "5")
    assert {(h["collection"], h["doc_id"]) for h in both["hits"]} == {("notes", "notes:README.md"),
                                                                      ("project", "project:README.md")}
    only = search_json(capsys, "backup", "--docs", notes, "--docs", project, "--collection", "project")
    assert [h["chunk_id"] for h in only["hits"]] == ["project:README.md#0"]
    # --doc-id (the ag.08 filter) still works, and inside a collection filter both must hold.
    one = search_json(capsys, "backup", "--docs", notes, "--docs", project, "--doc-id", "notes:README.md")
    assert [h["doc_id"] for h in one["hits"]] == ["notes:README.md"]
    none = search_json(capsys, "backup", "--docs", notes, "--docs", project, "--doc-id", "notes:README.md",
                       "--collection", "project")
    assert none["hits"] == []


def test_one_folder_keeps_its_ids_and_its_hits_say_their_collection(real_models, folders, capsys):
    notes, _ = folders
    hits = search_json(capsys, "tomatoes", "--docs", notes, "-k", "1")["hits"]
    assert hits[0]["chunk_id"] == "garden.md#0" and hits[0]["collection"] == "notes"
    assert main(["search", "tomatoes", "--docs", notes, "-k", "1", "-q"]) == 0
    head = capsys.readouterr().out.splitlines()[1]
    assert head.startswith(" 1. garden.md#0  lines 1-3") and head.endswith("  (notes)")


def test_a_missing_folder_is_one_notice_and_the_others_answer(real_models, folders, tmp_path, capsys):
    notes, project = folders
    code = main(["search", "backup", "--docs", notes, "--docs", str(tmp_path / "gone"), "--docs", project, "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and "2 hits for 'backup'" in out
    lines = [line for line in err.splitlines() if "gone" in line]
    assert len(lines) == 1 and "docs folder not found" in lines[0] and "Traceback" not in err


def test_an_unknown_collection_is_one_line_naming_the_collections(real_models, folders, capsys):
    notes, project = folders
    assert main(["search", "backup", "--docs", notes, "--docs", project, "--collection", "recipes"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "smoldocs: error: unknown collection 'recipes': the collections are notes, project"


def test_the_settings_file_names_collections(real_models, folders, tmp_path, monkeypatch, capsys):
    notes, project = folders
    settings = tmp_path / "config.toml"
    settings.write_text(f'[collections]\nmine = "{notes}"\nwork = "{project}"\n')
    monkeypatch.setenv("SMOLDOCS_CONFIG", str(settings))
    hits = search_json(capsys, "backup", "--collection", "work")["hits"]
    assert [(h["collection"], h["chunk_id"]) for h in hits] == [("work", "work:README.md#0")]
    assert main(["config"]) == 0
    assert f"mine = {notes}, work = {project}" in capsys.readouterr().out
    # A --docs flag takes the place of the file's collections, as flags do.
    hits = search_json(capsys, "backup", "--docs", notes)["hits"]
    assert {h["collection"] for h in hits} == {"notes"} and hits[0]["chunk_id"] == "README.md#0"
    settings.write_text('[collections]\nmine = 3\n')
    assert main(["search", "backup"]) == 2
    assert "collections.mine = 3 is not a folder in quotes" in capsys.readouterr().err


def test_ask_stays_inside_its_collection(folders, capsys):
    """SmolLM2-135M answers extractively: every quote it cites comes from the chosen collection."""
    notes, project = folders
    assert main(["ask", "When does the backup run?", "--docs", notes, "--docs", project, "--collection", "notes",
                 "--json", "-q"]) == 0
    data = read_output("ask", capsys.readouterr().out)
    cited = [c["chunk_id"] for c in data["citations"] if c["chunk_id"]]
    assert cited and all(cid.startswith("notes:") for cid in cited)


def test_mcp_search_docs_filters_by_collection(folders, tmp_path):
    """Over the SDK's stdio client: a third folder that is missing is one line on stderr; the two others answer."""
    notes, project = folders
    log = tmp_path / "stderr.log"
    with open(log, "w") as errlog, mcp_client("--docs", notes, "--docs", project, "--docs", str(tmp_path / "gone"),
                                              errlog=errlog) as client:
        error, text = client.call("search_docs", {"query": "backup", "collections": ["project"]})
        assert not error and set(excerpts(text).values()) == {"project:README.md#0"}
        error, text = client.call("search_docs", {"query": "backup"})
        assert not error and set(excerpts(text).values()) == {"notes:README.md#0", "project:README.md#0"}
        error, text = client.call("search_docs", {"query": "backup", "doc_ids": ["notes:README.md"],
                                                  "collections": ["project"]})
        assert not error and text == "no results"
        error, text = client.call("search_docs", {"query": "backup", "collections": ["recipes"]})
        assert error and "unknown collection 'recipes': the collections are notes, project" in text
    notices = [line for line in log.read_text().splitlines() if "collection gone" in line]
    assert len(notices) == 1 and "docs folder not found" in notices[0] and "searching the other collections" in notices[0]


def test_index_of_two_folders_reports_both_and_stores_each(real_models, folders, tmp_path, capsys):
    notes, project = folders
    argv = ["index", "--docs", notes, "--docs", project, "--index", str(tmp_path / "idx")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "index of 2 collections (notes, project): 3 files, 3 chunks; rebuilt" in out
    assert f"stored in {tmp_path / 'idx' / 'notes'}, {tmp_path / 'idx' / 'project'}" in out
    assert main(argv) == 0
    assert "3 files, 3 chunks; up to date" in capsys.readouterr().out


def test_index_watch_keeps_a_folder_and_man_pages_fresh(folders, tmp_path):
    """A subprocess as a user runs it: a note saved and a man page a package adds are each re-indexed, reported
    under their collection; Ctrl+C stops it."""
    import os
    import shutil
    import signal
    import subprocess
    import sys
    import threading

    notes, _ = folders
    tree = tmp_path / "man"
    shutil.copytree(Path(__file__).parent / "data" / "manpages", tree)
    env = dict(os.environ, PYTHONUNBUFFERED="1", MANPATH=str(tree))
    command = [sys.executable, "-m", "agent", "index", "--watch", "--docs", notes, "--man", "8",
               "--index", str(tmp_path / "idx"), "-q"]
    # SIGINT's default back, as a terminal gives it (a test run in the background inherits it ignored)
    process = subprocess.Popen(command, cwd=Path(__file__).resolve().parent.parent, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    seen = threading.Condition()

    def read() -> None:
        for line in process.stdout:
            with seen:
                lines.append(line)
                seen.notify_all()

    def wait_for(text: str) -> bool:
        with seen:
            return seen.wait_for(lambda: any(text in line for line in lines), timeout=120)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert wait_for("watching"), lines
        assert f"watching {Path(notes).resolve()}, man pages of {tree}" in "".join(lines)
        Path(notes, "boat.md").write_text("# Boat\n\nThe dinghy is moored at the north jetty.\n")
        assert wait_for("added: notes:boat.md"), lines
        (tree / "man8" / "newd.8").write_text(".TH NEWD 8\n.SH NAME\nnewd \\- a daemon a package just added\n")
        assert wait_for("added: man:man8/newd.8"), lines
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        reader.join(10)
    assert process.returncode == 0 and "stopped watching" in "".join(lines)


def test_ask_names_the_collection_of_each_citation(folders, capsys):
    notes, project = folders
    assert main(["ask", "When does the backup run?", "--docs", notes, "--docs", project, "--collection", "notes",
                 "-q"]) == 0
    lines = capsys.readouterr().out.split("Citations:\n", 1)[1].splitlines()
    cited = [line for line in lines if line.startswith("  [")]
    assert cited and all(line.endswith("(Notes) · notes") for line in cited)


def test_chat_opens_every_folder_as_collections_and_keeps_the_filter(folders, tmp_path, monkeypatch):
    """chat hands the app a session factory; the session it opens joins both folders, searched inside notes
    (the session itself is tested in test_collections.py; here only what chat passes on is pinned)."""
    import agent.session
    import agent.surfaces.tui
    from rag.indexing.collections import Collections

    notes, project = folders
    seen: dict = {}

    class App:
        return_code = 0

        def __init__(self, factory) -> None:
            self.factory = factory

        def run(self) -> None:
            self.factory()

    monkeypatch.setattr(agent.surfaces.tui, "make_app", lambda factory, store, **options: App(factory))
    monkeypatch.setattr(agent.session, "open_session", lambda docs, model, **kw: seen.update(docs=docs, **kw))
    assert main(["chat", "--docs", notes, "--docs", project, "--collection", "notes"]) == 0
    assert isinstance(seen["docs"], Collections) and seen["docs"].names == ["notes", "project"]
    assert seen["only"] == ["notes"] and seen["index_dir"] is None
    assert main(["chat", "--docs", notes]) == 0
    assert seen["docs"] == Path(notes).resolve() and seen["collection"] == "notes" and seen["only"] == ()
