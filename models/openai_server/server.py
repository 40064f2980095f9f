"""Streaming chat completions from a model server (llama-server, vLLM, Ollama, llama-cpp-python) with exact counts.

The chat template is rendered here and the prompt text is sent to /v1/completions, so the tokens we counted are
the tokens the server evaluates; a probe at start-up checks that against the server's own `usage`.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Iterator, Sequence

import httpx2 as httpx  # the HTTP client the openai SDK is built on
import openai
from openai.types import Completion, CompletionChoice, CompletionUsage

from models.config import DEFAULT_N_CTX
from models.errors import (
    ContextTooSmall, CountMismatch, GenerationError, ModelError, ServerInterrupted, ServerRefused, ServerUnreachable,
)
from models.protocols import CancelFlag, GenerationOptions, GenerationStats, Message
from models.redaction import redact_url
from models.openai_server.server_api import ServerAPI, ServerConfig, ServerInfo, explain, not_understood, sent
from models.openai_server.server_tokenizer import server_tokenizer

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
        usage = reply.usage if isinstance(reply, Completion) else None  # the SDK returns a text reply as a str
        theirs = usage.prompt_tokens if isinstance(usage, CompletionUsage) else None
        if isinstance(reply, str) or (theirs is not None and not isinstance(theirs, int)):
            raise not_understood("/completions", reply if isinstance(reply, str) else f"usage: {reply.usage}", self.config)
        if theirs != ours:
            raise CountMismatch(
                f"token counts disagree on a probe prompt: smoldocs counts {ours}, the server at "
                f"{self.config.shown_url} counts {theirs}: pass --tokenizer PATH to a GGUF of the model it runs"
            )
        return 1000 * (time.perf_counter() - start)

    def close(self) -> None:
        self.api.close()

    def cache_prefix(self, messages: Sequence[Message]) -> None:
        return None  # the server keeps its own prompt cache

    def stream(
        self,
        messages: Sequence[Message],
        options: GenerationOptions = GenerationOptions(),
        cancel: CancelFlag | None = None,
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
        # The read timeout restarts with every byte, keep-alive comments included: the deadlines of the first token,
        # of each next token and of the whole answer are kept apart, and closing the reply when one passes ends the
        # read at the server's next byte.
        elapsed = time.perf_counter() - start
        watch = _StreamWatch(chunks.response, self.config.first_token_timeout - elapsed, self.config.token_timeout,
                             self.config.answer_timeout - elapsed)
        try:
            for chunk in chunks:
                chunk_usage, parts = self._parts(chunk, bool(pieces))
                if chunk_usage is not None:
                    usage = chunk_usage
                for text, reason in parts:
                    if text:
                        if not watch.token():
                            raise self._timed_out(watch.expired, bool(pieces))
                        if not pieces:
                            stats.time_to_first_token = time.perf_counter() - start
                        pieces.append(text)
                        yield text
                    if reason:
                        finish, finished = reason, True
                if cancel is not None and cancel.cancelled:
                    finish = "cancelled"
                    break
            if watch.expired:
                raise self._timed_out(watch.expired, bool(pieces))
            if not finished and finish != "cancelled":
                finish = "interrupted"
                raise self._ended_early(n_prompt, bool(pieces))
        except ModelError:
            if finish != "interrupted":
                finish = "interrupted" if pieces else "error"
            raise
        except Exception as exc:
            finish = "interrupted" if pieces else "error"
            if watch.expired:  # closing the reply broke the read, whichever way the HTTP stack reports it
                raise self._timed_out(watch.expired, bool(pieces)) from None
            if not isinstance(exc, (openai.OpenAIError, httpx.HTTPError, ValueError)):
                raise
            if isinstance(exc, json.JSONDecodeError):  # the SDK parses each event with json.loads
                raise self._bad_event(f"an event that is not JSON ({sent(exc.doc)})", bool(pieces)) from None
            if isinstance(exc, ValueError):
                raise
            raise explain(exc, self.config, streaming=bool(pieces)) from None
        finally:
            watch.cancel()
            chunks.close()  # a closed connection is how the server learns to stop generating
            stats.total_time = time.perf_counter() - start
            stats.finish_reason = finish
            if usage is not None and finish != "cancelled":
                stats.completion_tokens = usage
                stats.completion_source = "server"
            else:  # the server sent no usage (llama-cpp-python) or we left early: count the text we got, whole
                stats.completion_tokens = self.tokenizer.count("".join(pieces))
                stats.completion_source = "counted"

    def _parts(self, chunk, partial: bool) -> tuple[int | None, list[tuple[str | None, str | None]]]:
        """A stream chunk's completion-token count and (text, finish reason) per choice, or one line naming the
        field that has the wrong shape (the SDK builds chunks without checking them)."""
        # An event that is a JSON object becomes a Completion; its fields keep whatever JSON they held (an object
        # becomes the declared model, a missing field None). Any other JSON value comes back as it is.
        usage = chunk.usage if isinstance(chunk, Completion) else None
        tokens = usage.completion_tokens if isinstance(usage, CompletionUsage) else None
        if (usage is not None and not isinstance(usage, CompletionUsage)) or not isinstance(tokens, (int, type(None))):
            raise self._bad_event(f"usage: {_shown(usage)}", partial)
        choices = chunk.choices if isinstance(chunk, Completion) else None
        choices = [] if choices is None else choices  # some servers leave them out of the usage-only chunk
        if not isinstance(choices, list):
            raise self._bad_event(f"choices: {_shown(choices)}", partial)
        parts: list[tuple[str | None, str | None]] = []
        for choice in choices:
            text, reason = (choice.text, choice.finish_reason) if isinstance(choice, CompletionChoice) else (None, None)
            if not isinstance(text, (str, type(None))):
                raise self._bad_event(f"text: {_shown(text)}", partial)
            if not isinstance(reason, (str, type(None))):
                raise self._bad_event(f"finish_reason: {_shown(reason)}", partial)
            parts.append((text, reason))
        return tokens, parts

    def _bad_event(self, what: str, partial: bool) -> ModelError:
        url = self.config.shown_url
        if partial:
            return ServerInterrupted(f"the model server at {url} sent a stream event of the wrong shape ({what}): "
                                     "the partial answer is kept, marked interrupted; check the server")
        return ServerRefused(f"the model server at {url} sent a stream event of the wrong shape ({what}): "
                             "check that it serves the OpenAI completions API")

    def _timed_out(self, deadline: str | None, partial: bool) -> ModelError:
        """One line for the deadline that passed: the first token's, the next token's or the whole answer's."""
        url, config = self.config.shown_url, self.config
        kept = "the partial answer is kept, marked interrupted; " if partial else ""
        if deadline == "idle":
            return ServerInterrupted(
                f"the model server at {url} sent no token for {config.token_timeout:g} s after the answer began "
                f"(keep-alive comments do not count): {kept}raise --token-timeout or check the server"
            )
        if deadline == "total":
            return (ServerInterrupted if partial else ServerUnreachable)(
                f"the model server at {url} did not finish the answer within {config.answer_timeout:g} s: {kept}"
                "raise --answer-timeout or ask for a shorter answer"
            )
        return ServerUnreachable(
            f"the model server at {url} sent no answer within {config.first_token_timeout:g} s "
            "of the request: it may be overloaded; raise --first-token-timeout or check the server"
        )

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


def _shown(value) -> str:
    try:
        text = json.dumps(value, default=lambda v: getattr(v, "__dict__", str(v)))
    except (TypeError, ValueError):
        text = repr(value)
    return sent(text, 60)


class _StreamWatch:
    """Closes a streamed reply when a deadline passes: the first token's, the next token's (the server's keep-alive
    comments do not count as tokens) or the whole answer's. `expired` says which: first | idle | total."""

    def __init__(self, response, first: float, idle: float, total: float) -> None:
        self.response = response
        self.expired: str | None = None
        self._start = time.monotonic()
        self._first, self._idle, self._total = first, idle, total
        self._last: float | None = None  # when the last token came
        self._until = float("inf")  # the deadline the watch sleeps towards
        self._stopped = False
        self._cond = threading.Condition()
        threading.Thread(target=self._watch, daemon=True, name="stream-watch").start()

    def token(self) -> bool:
        """A token came: True when it beat its deadline (the next token's starts now), False when one had passed."""
        with self._cond:
            if self.expired is None:
                self._last = time.monotonic()
                if self._last + self._idle < self._until:  # the watch sleeps towards a later deadline: wake it
                    self._cond.notify()
            return self.expired is None

    def _deadline(self) -> tuple[float, str]:
        at, which = (self._start + self._first, "first") if self._last is None else (self._last + self._idle, "idle")
        return (self._start + self._total, "total") if self._start + self._total <= at else (at, which)

    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                at, which = self._deadline()
                left = at - time.monotonic()
                if left <= 0:
                    self.expired = which
                    break
                self._until = at
                self._cond.wait(left)  # tokens move the deadline: it is computed again on waking
        if self.expired is not None:
            self.response.close()

    def cancel(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()


def open_server_model(config: ServerConfig) -> ServerChatModel:
    """Connect, discover the model, load its tokenizer and check the counts: one line on any failure."""
    return ServerChatModel(config)
