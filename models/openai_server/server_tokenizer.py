"""The served model's tokenizer and chat template: from a GGUF given with --tokenizer, else from the server itself.

Counts stay exact only if what we count is what the server evaluates, so the prompt is rendered here (or by the
server's own template endpoint) and sent as text to /v1/completions. Where neither source exists we refuse.
"""

from __future__ import annotations

import functools
import threading
from typing import Sequence

from models.errors import NoTokenizer
from models.protocols import Message
from models.redaction import redact_url
from models.openai_server.server_api import ServerAPI, ServerInfo


class ServerTokenizer:
    """Encodes through the server's /tokenize endpoint; renders with the template the server reports.

    llama-server: /tokenize, template from /props rendered here as llama.cpp's Jinja handler does. vLLM: its
    /tokenize applies the chat template itself, and /detokenize turns those ids back into the prompt text.
    """

    def __init__(self, api: ServerAPI, info: ServerInfo) -> None:
        self.api = api
        self.info = info
        self.name = f"{info.model} ({info.family} at {redact_url(api.config.root)})"
        self._lock = threading.Lock()
        self._formatter = _formatter(info.chat_template, info) if info.family == "llama-server" and info.chat_template else None
        self._bos_ids = self._tokenize("", add_special=True)  # what the server prepends to every prompt

    # -- the Tokenizer protocol ---------------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        return self._tokenize(text, add_special=False)

    def count(self, text: str) -> int:
        return len(self.encode(text)) if text else 0

    def decode(self, ids: Sequence[int]) -> str:
        if self.info.family == "llama-server":
            return str(self.api.post_json("/detokenize", {"tokens": list(ids)}).get("content", ""))
        return str(self.api.post_json("/detokenize", {"model": self.info.model, "tokens": list(ids)}).get("prompt", ""))

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self._render(messages, add_generation_prompt)[0]

    def count_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> int:
        """Tokens of the prompt text as the server will tokenize it on /v1/completions."""
        return len(self._tokenize(self.render_chat(messages, add_generation_prompt), add_special=True))

    def render_prompt(self, messages: Sequence[Message]) -> tuple[str, list[str]]:
        return self._render(messages, True)

    # -- the server's endpoints ---------------------------------------------------------------------------------

    @functools.lru_cache(maxsize=4096)
    def _tokenize(self, text: str, add_special: bool) -> list[int]:
        # Cached: the context manager counts the same prefixes many times a turn, and each count is a round trip.
        if self.info.family == "llama-server":
            body = {"content": text, "add_special": add_special, "parse_special": True}
        else:
            body = {"model": self.info.model, "prompt": text, "add_special_tokens": add_special}
        return list(self.api.post_json("/tokenize", body).get("tokens", []))

    def _render(self, messages: Sequence[Message], add_generation_prompt: bool) -> tuple[str, list[str]]:
        if self._formatter is not None:
            with self._lock:
                self._formatter.add_generation_prompt = add_generation_prompt
                result = self._formatter(messages=[dict(m) for m in messages])
            stop = result.stop if isinstance(result.stop, list) else ([result.stop] if result.stop else [])
            prompt = result.prompt
        else:  # vLLM renders its own template: ids of the chat, back to text
            body = {"model": self.info.model, "messages": [dict(m) for m in messages],
                    "add_generation_prompt": add_generation_prompt, "add_special_tokens": False}
            ids = list(self.api.post_json("/tokenize", body).get("tokens", []))
            prompt, stop = self.decode(ids), []
        # The server prepends its BOS to every prompt: a template that writes one would make it appear twice.
        bos = self.decode(self._bos_ids) if self._bos_ids else ""
        if bos and prompt.startswith(bos):
            prompt = prompt[len(bos):]
        return prompt, stop


def _formatter(template: str, info: ServerInfo):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    return Jinja2ChatFormatter(template=template, eos_token=info.eos_token, bos_token=info.bos_token)


def server_tokenizer(api: ServerAPI, info: ServerInfo, tokenizer_path=None):
    """The exact tokenizer for this server, or a one-line NoTokenizer naming what is missing and the fix."""
    if tokenizer_path is not None:
        from models.llama_cpp.tokenizer import load_tokenizer

        return load_tokenizer(tokenizer_path)
    if info.family == "llama-server" and info.chat_template:
        return ServerTokenizer(api, info)
    if info.family == "vllm":
        return ServerTokenizer(api, info)
    url = api.config.shown_url
    if info.family == "llama-cpp-python":
        raise NoTokenizer(
            f"the server at {url} tokenizes (/extras/tokenize) but does not serve its chat template, so prompt counts "
            "could not be exact: pass --tokenizer PATH to the GGUF it runs"
        )
    raise NoTokenizer(
        f"the server at {url} serves no tokenizer or chat template (Ollama and other OpenAI-compatible servers do "
        "not), so token counts could not be exact: pass --tokenizer PATH to a GGUF of the same model"
    )
