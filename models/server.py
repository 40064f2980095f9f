"""Streaming chat completions from a model server (llama-server, vLLM, Ollama, llama-cpp-python) with exact counts.

The chat template is rendered here and the prompt text is sent to /v1/completions, so the tokens we counted are
the tokens the server evaluates; a probe at start-up checks that against the server's own `usage`.
"""

from __future__ import annotations

import time
from typing import Iterator, Sequence

import httpx2 as httpx  # the HTTP client the openai SDK is built on
import openai

from models.config import DEFAULT_N_CTX
from models.errors import ContextTooSmall, CountMismatch, GenerationError, ModelError, ServerInterrupted, ServerRefused
from models.protocols import CancelToken, GenerationOptions, GenerationStats, Message
from models.server_api import ServerAPI, ServerConfig, ServerInfo, explain, redact_url
from models.server_tokenizer import server_tokenizer

PROBE = (
    {"role": "system", "content": "You are a careful assistant. Answer in one word."},
    {"role": "user", "content": "Which token count do we agree on? Say OK."},
)
MIN_N_CTX = 1024  # below this the answer reserve and the evidence floor leave no room for a question


class ServerChatModel:
    """A ChatModel served over HTTP. Logits stay on the server: `supports_guard` is False, grammars go through the
    server's own grammar field where it has one."""

    supports_guard = False

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.api = ServerAPI(config)
        self.info: ServerInfo = self.api.discover()
        self.tokenizer = server_tokenizer(self.api, self.info, config.tokenizer)
        self.name = f"{self.info.model.rsplit('/', 1)[-1]} @ {redact_url(config.root).split('://', 1)[-1]}"
        self.n_ctx = self.info.n_ctx or config.n_ctx or DEFAULT_N_CTX
        self.n_ctx_source = "server" if self.info.n_ctx else ("--n-ctx" if config.n_ctx else "default")
        if self.n_ctx < MIN_N_CTX:
            raise ContextTooSmall(
                f"the model server at {config.shown_url} holds only {self.n_ctx} tokens of context, smoldocs needs "
                f"at least {MIN_N_CTX}: start it with a larger context (llama-server -c 4096)"
            )
        self.n_params = self.info.n_params
        self.supports_grammar = self.info.grammar_field is not None
        self.last_stats = GenerationStats()
        self.probe_ms = self.check_counts()

    def check_counts(self) -> float:
        """Milliseconds to check that our count of a probe prompt equals the server's `usage.prompt_tokens`."""
        start = time.perf_counter()
        prompt, _stop = self.tokenizer.render_prompt(PROBE)
        ours = self.tokenizer.count_chat(PROBE)
        try:
            reply = self.api.openai.completions.create(model=self.info.model, prompt=prompt, max_tokens=1, temperature=0)
        except (openai.OpenAIError, httpx.HTTPError) as exc:
            raise explain(exc, self.config) from None
        theirs = reply.usage.prompt_tokens if reply.usage else None
        if theirs != ours:
            raise CountMismatch(
                f"token counts disagree on a probe prompt: smoldocs counts {ours}, the server at "
                f"{self.config.shown_url} counts {theirs}: pass --tokenizer PATH to a GGUF of the model it runs"
            )
        return 1000 * (time.perf_counter() - start)

    def close(self) -> None:
        self.api.close()

    def stream(
        self,
        messages: Sequence[Message],
        options: GenerationOptions = GenerationOptions(),
        cancel: CancelToken | None = None,
    ) -> Iterator[str]:
        """Yield text deltas; cancelling closes the stream, which stops the server's generation."""
        prompt, template_stop = self.tokenizer.render_prompt(messages)
        n_prompt = self.tokenizer.count_chat(messages)
        if n_prompt + 1 > self.n_ctx:
            raise GenerationError(
                f"prompt of {n_prompt} tokens does not fit the server's {self.n_ctx}-token context: shorten the input"
            )
        stats = GenerationStats(prompt_tokens=n_prompt)
        self.last_stats = stats
        extra: dict = {"top_k": options.top_k, "min_p": options.min_p, "repeat_penalty": options.repeat_penalty}
        if options.grammar and self.info.grammar_field:
            extra[self.info.grammar_field] = options.grammar
        start = time.perf_counter()
        pieces: list[str] = []
        usage = None
        finish, finished = "stop", False
        try:
            chunks = self.api.openai.completions.create(
                model=self.info.model,
                prompt=prompt,
                max_tokens=max(1, min(options.max_tokens, self.n_ctx - n_prompt)),
                temperature=options.temperature,
                top_p=options.top_p,
                stop=list(dict.fromkeys([*template_stop, *options.stop])) or None,
                seed=options.seed if options.seed is not None else 0,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra,
            )
        except (openai.OpenAIError, httpx.HTTPError) as exc:
            stats.finish_reason = "error"
            raise explain(exc, self.config) from None
        try:
            for chunk in chunks:
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    if choice.text:
                        if not pieces:
                            stats.time_to_first_token = time.perf_counter() - start
                        pieces.append(choice.text)
                        yield choice.text
                    if choice.finish_reason:
                        finish, finished = choice.finish_reason, True
                if cancel is not None and cancel.cancelled:
                    finish = "cancelled"
                    break
            if not finished and finish != "cancelled":
                finish = "interrupted"
                raise self._ended_early(n_prompt, bool(pieces))
        except (openai.OpenAIError, httpx.HTTPError) as exc:
            finish = "interrupted"
            raise explain(exc, self.config, streaming=bool(pieces)) from None
        finally:
            chunks.close()  # a closed connection is how the server learns to stop generating
            stats.total_time = time.perf_counter() - start
            stats.finish_reason = finish
            if usage is not None and finish != "cancelled":
                stats.completion_tokens = usage.completion_tokens
                stats.completion_source = "server"
            else:  # the server sent no usage (llama-cpp-python) or we left early: count the text we got, whole
                stats.completion_tokens = self.tokenizer.count("".join(pieces))
                stats.completion_source = "counted"


    def _ended_early(self, n_prompt: int, partial: bool) -> ModelError:
        """A stream that closed without a finish reason: the server failed after it had said 200 OK."""
        url = self.config.shown_url
        if partial:
            return ServerInterrupted(
                f"the model server at {url} ended the answer without finishing it: the partial answer is kept, "
                "marked interrupted; check the server's log and ask again"
            )
        hint = ""
        if self.n_ctx_source != "server":
            hint = f"; a {n_prompt}-token prompt may not fit its context: is --n-ctx {self.n_ctx} right?"
        return ServerRefused(f"the model server at {url} ended the stream without an answer (see its log{hint})")


def open_server_model(config: ServerConfig) -> ServerChatModel:
    """Connect, discover the model, load its tokenizer and check the counts: one line on any failure."""
    return ServerChatModel(config)
