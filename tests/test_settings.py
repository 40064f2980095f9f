"""One typed Settings, resolved once at the CLI's entry, and agent.opening: the one way to open models and docs."""

from __future__ import annotations

import inspect
import os
import typing
from pathlib import Path

import pytest

from agent import config
from agent.cli import parse
from agent.surfaces.commands import COMMANDS
from agent.opening import Loaders, Models, open_docs, open_models
from agent.settings import AgentSettings, Settings
from fakes import HashEmbedder, ScriptedChatModel, WordTokenizer


@pytest.fixture
def settings_file(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    monkeypatch.setenv("SMOLDOCS_CONFIG", str(path))
    for key in config.KEYS:
        if key.env:
            monkeypatch.delenv(key.env, raising=False)
    monkeypatch.delenv(config.API_KEY_ENV, raising=False)
    return path


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_runs_on_settings_and_its_own_options(name):
    """No function past the CLI's entry takes the argparse Namespace: each `run` takes (Settings, Options)."""
    import importlib

    module = importlib.import_module(COMMANDS[name])
    hints = typing.get_type_hints(module.run)
    assert list(inspect.signature(module.run).parameters) == ["settings", "options"]
    assert (hints["settings"], hints["options"]) == (Settings, module.Options)


def test_the_command_line_becomes_typed_settings_and_options(settings_file, tmp_path):
    command = parse(["search", "kv cache", "--docs", str(tmp_path), "--n-ctx", "4096", "-k", "3", "--current-only",
                     "--base-url", "http://127.0.0.1:9/v1", "--connect-timeout", "2.5"])
    s = command.settings
    assert (s.docs, s.n_ctx, s.current_only, s.base_url, s.connect_timeout) == (tmp_path, 4096, True, "http://127.0.0.1:9/v1", 2.5)
    assert (command.options.query, command.options.k, command.options.mode) == ("kv cache", 3, "hybrid")
    assert s.origin is not None and s.origin.sources["n_ctx"] == "flag --n-ctx" and s.origin.sources["store"] == "default"
    with pytest.raises(Exception):  # frozen: resolved once, never filled in later
        s.n_ctx = 8192  # type: ignore[misc]


def test_the_file_and_the_environment_reach_the_typed_fields(settings_file, monkeypatch, tmp_path):
    settings_file.write_text('tools = "model"\nrerank = "on"\ntemperature = 0.7\nmax_tokens = 99\n'
                             f'token_timeout = 7\ntokenizer = "{tmp_path}/t.gguf"\n')
    monkeypatch.setenv("SMOLDOCS_DECODING", "free")
    monkeypatch.setenv("SMOLDOCS_API_KEY", "sk-env")
    s = config.settings_from({}, os.environ)
    assert (s.agent.policy, s.agent.decoding, s.agent.rerank) == ("model", "free", True)
    assert (s.agent.generation.temperature, s.agent.generation.max_tokens) == (0.7, 99)
    assert (s.token_timeout, s.tokenizer, s.api_key) == (7.0, tmp_path / "t.gguf", "sk-env")
    assert s.origin.sources["decoding"] == "env SMOLDOCS_DECODING" and s.origin.api_key_source == "env SMOLDOCS_API_KEY"


def test_the_files_temperature_and_length_reach_ask_which_has_no_such_flags(settings_file):
    """docs/settings.md shows `temperature = 0.2` in config.toml: before Settings only eval, which has the flags,
    applied it; ask and chat dropped it."""
    settings_file.write_text("temperature = 0.05\nmax_tokens = 40\n")
    for argv in (["ask", "what?"], ["chat"]):
        generation = parse(argv).settings.agent.generation
        assert (generation.temperature, generation.max_tokens) == (0.05, 40)


def test_defaults_are_the_agents_own(settings_file):
    s = config.settings_from({}, os.environ)
    assert s.agent == AgentSettings()
    assert (s.docs, s.index, s.store, s.embed_budget, s.quiet) == (None, None, None, None, False)


def test_man_pages_get_an_index_of_their_own_unless_one_is_given(settings_file, tmp_path):
    from rag.ingest.man_pages import ManSource

    pages = ManSource((tmp_path,))
    own = config.settings_from({"docs": pages}, os.environ)
    assert own.docs is pages and own.index is not None and own.index.name == pages.index_key
    assert config.settings_from({"docs": pages, "index": str(tmp_path / "i")}, os.environ).index == tmp_path / "i"


def test_man_pages_with_a_store_are_two_indexes_in_one_line(settings_file, capsys, monkeypatch, tmp_path):
    from agent.cli import main

    (tmp_path / "man1").mkdir()
    (tmp_path / "man1" / "x.1").write_text(".TH X 1\n.SH NAME\nx \\- a tool\n")
    monkeypatch.setenv("MANPATH", str(tmp_path))
    assert main(["search", "tool", "--man", "--store", "postgresql://nobody@127.0.0.1:9/docs"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--store and --index name two different indexes" in err and "\n" not in err


def _counting(calls: list[str]) -> Loaders:
    def chat(settings):
        calls.append("chat")
        return ScriptedChatModel(["hi"])

    def tokenizer(settings):
        calls.append("tokenizer")
        return WordTokenizer()

    def embedder(settings):
        calls.append("embedder")
        return HashEmbedder(64)

    return Loaders(chat, tokenizer, embedder)


def test_models_open_on_first_use_and_once():
    calls: list[str] = []
    models = open_models(Settings(), _counting(calls))
    assert calls == []
    assert models.embedder is models.embedder and calls == ["embedder"]
    assert isinstance(models.tokenizer, WordTokenizer) and calls == ["embedder", "tokenizer"]


def test_once_the_chat_model_is_open_its_own_tokenizer_measures_the_chunks():
    calls: list[str] = []
    models = Models(Settings(), _counting(calls))
    chat = models.chat
    assert models.tokenizer is chat.tokenizer and calls == ["chat"]


def test_open_docs_opens_a_folder_once_or_live(docs, tmp_path):
    settings = Settings(docs=docs, index=tmp_path / "i")
    models = open_models(settings, _counting([]))
    index = open_docs(settings, models)
    assert len(index) > 0 and index.docs_dir == docs.resolve()
    live = open_docs(settings, models, live=True, watch=False)
    try:
        assert live.watcher is None and {c.chunk_id for c in live.chunks} == {c.chunk_id for c in index.chunks}
    finally:
        live.close()


def test_a_chat_session_opens_through_the_same_two_functions(docs, tmp_path):
    from agent.session import start_session

    settings = Settings(docs=docs, index=tmp_path / "i", agent=AgentSettings(policy="search-first"))
    session = start_session(settings, open_models(settings, _counting(calls := [])))
    try:
        assert calls[0] == "chat" and "tokenizer" not in calls  # the chat model's tokenizer counted the chunks
        assert session.docs_dir == Path(docs).resolve() and session.settings.policy == "search-first"
    finally:
        session.close()


def test_the_chat_command_opens_a_live_session_through_the_same_loaders(docs, tmp_path, monkeypatch, settings_file):
    """`smoldocs chat` hands the app a factory; the session it makes searches a live index of --docs."""
    import agent.surfaces.tui
    from agent.cli import main
    from agent.surfaces.commands import common
    from rag.indexing.live import LiveIndex

    made = {}

    class App:
        return_code = 0

        def __init__(self, factory, store, theme=None, clipboard="auto"):
            made["factory"], made["theme"] = factory, theme

        def run(self):
            made["session"] = made["factory"]()

    monkeypatch.setattr(agent.surfaces.tui, "make_app", App)
    monkeypatch.setattr(common, "open_chat_model", lambda settings: ScriptedChatModel(["hi"]))
    monkeypatch.setattr(common, "load_embedder_from_args", lambda settings: HashEmbedder(64))
    settings_file.write_text('tools = "model"\n')
    assert main(["chat", "--docs", str(docs), "--index", str(tmp_path / "i"), "--theme", "textual-light"]) == 0
    session = made["session"]
    try:
        assert made["theme"] == "textual-light" and isinstance(session.retriever, LiveIndex)
        assert session.docs_dir == docs.resolve() and session.settings.policy == "model"
    finally:
        session.close()
