"""The chat model's own tokenizer, loaded vocab-only, and its chat template rendered as llama.cpp's handler does."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Sequence

from models.config import ModelConfig
from models.llama_cpp.loading import open_llama
from models.locate import resolve_model_path
from models.protocols import Message


def chat_formatter(llm):
    """The Jinja2 formatter llama-cpp-python builds from the GGUF's `tokenizer.chat_template`."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = (llm.metadata or {}).get("tokenizer.chat_template")
    if not template:
        return None
    eos_id, bos_id = llm.token_eos(), llm.token_bos()
    eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
    bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
    return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, stop_token_ids=[eos_id])


class ChatRenderer:
    """Renders messages into the exact prompt text and token ids the model will see."""

    def __init__(self, llm) -> None:
        self._llm = llm
        self._formatter = chat_formatter(llm)

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> tuple[str, bool, list[str]]:
        """(prompt text, whether it already carries BOS, stop strings)."""
        if self._formatter is None:
            # No template in the GGUF: fall back to ChatML, the most common format.
            text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
            if add_generation_prompt:
                text += "<|im_start|>assistant\n"
            return text, False, ["<|im_end|>"]
        self._formatter.add_generation_prompt = add_generation_prompt
        result = self._formatter(messages=[dict(m) for m in messages])
        stop = result.stop if isinstance(result.stop, list) else ([result.stop] if result.stop else [])
        return result.prompt, bool(result.added_special), stop

    def tokens(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> list[int]:
        prompt, added_special, _ = self.render(messages, add_generation_prompt)
        return self._llm.tokenize(prompt.encode("utf-8"), add_bos=not added_special, special=True)


class LlamaTokenizer:
    """Counts, encodes and decodes with the model's vocabulary. Counts are not additive: count whole texts."""

    def __init__(self, path: Path, llm=None) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self._llm = llm if llm is not None else open_llama(ModelConfig(path=self.path), vocab_only=True)
        self._renderer = ChatRenderer(self._llm)
        self._lock = threading.Lock()

    def encode(self, text: str) -> list[int]:
        with self._lock:
            return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        with self._lock:
            return self._llm.detokenize(list(ids)).decode("utf-8", errors="replace")

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        with self._lock:
            return self._renderer.render(messages, add_generation_prompt)[0]

    def render_prompt(self, messages: Sequence[Message]) -> tuple[str, list[str]]:
        """The prompt text to send to a server (with the generation prompt) and the template's stop strings."""
        with self._lock:
            prompt, _added_special, stop = self._renderer.render(messages)
            model = self._llm._model
            bos = model.token_get_text(model.token_bos()) if model.add_bos_token() and model.token_bos() != -1 else ""
        # A server prepends BOS itself when the vocabulary asks for it: a template that writes one would double it.
        if bos and prompt.startswith(bos):
            prompt = prompt[len(bos):]
        return prompt, stop

    def chat_tokens(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> list[int]:
        with self._lock:
            return self._renderer.tokens(messages, add_generation_prompt)

    def count_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> int:
        """Tokens of the whole prompt as llama.cpp's chat handler would send it."""
        return len(self.chat_tokens(messages, add_generation_prompt))


@functools.lru_cache(maxsize=4)
def _load(path: Path) -> LlamaTokenizer:
    return LlamaTokenizer(path)


def load_tokenizer(path: str | Path | None = None) -> LlamaTokenizer:
    """The tokenizer of `path` (default: the packaged SmolLM2-135M), loaded once per process."""
    return _load(resolve_model_path(path).resolve())
