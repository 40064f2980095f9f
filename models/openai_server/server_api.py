"""Talking to a model server over the OpenAI HTTP API: what it serves, what it knows, and its errors as one line.

Completions go through the official `openai` SDK; `/v1/models` (read and checked here, so a reply of the wrong
shape is one line) and the endpoints that are not OpenAI's (llama-server `/props` and `/tokenize`, vLLM
`/tokenize`, llama-cpp-python `/extras/tokenize`) through `httpx`. Every reply body read whole, by either client,
is cut at MAX_RESPONSE_BYTES, and a streamed completion at MAX_EVENT_BYTES an event and stream_byte_limit(max_tokens)
in all: a server that never ends its body costs a bounded amount of memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx  # the HTTP client the openai SDK is built on
import openai

from models.errors import ModelError, ServerInterrupted, ServerRefused, ServerUnreachable
from models.redaction import redact_url, scrub

# The largest whole reply read is /tokenize of a full 32k-token prompt, about 250 KB; 16 MiB leaves room for any
# honest server (a /props with a long chat template is tens of KB) and bounds a hostile one.
MAX_RESPONSE_BYTES = 16 * 2**20
# A streamed completion is read event by event, never whole, but an event is buffered whole by the SDK: one honest
# event carries a token or a few in ~300 bytes (the last one, usage and timings, a few KB). Past MAX_EVENT_BYTES in
# one event, or past stream_byte_limit(max_tokens) in all, reading stops (a 20 MB "token" once cost 2.75 GB).
MAX_EVENT_BYTES = 2**20
STREAM_BYTES_PER_TOKEN = 4096  # an event per token with room for logprobs-sized extras
NO_KEY = "no-key"  # the SDK insists on a key; servers started without one ignore it

# Which body field carries a GBNF grammar, per server family (None: the server has no grammar support we know).
GRAMMAR_FIELD = {"llama-server": "grammar", "llama-cpp-python": "grammar", "vllm": "guided_grammar", "openai": None}


@dataclass(frozen=True)
class ServerConfig:
    base_url: str  # as the OpenAI SDK takes it, e.g. http://127.0.0.1:8080/v1
    api_key: str | None = None
    model: str | None = None  # the served model's name; None: the only one it serves
    tokenizer: Path | None = None  # a GGUF of the same model, loaded vocabulary-only
    n_ctx: int | None = None  # the context window, when the server does not say
    connect_timeout: float = 5.0
    first_token_timeout: float = 120.0  # also the longest wait between two streamed pieces
    token_timeout: float = 60.0  # the longest wait for the next token once the answer began (keep-alives do not count)
    answer_timeout: float = 600.0  # the longest a whole answer may stream

    @property
    def shown_url(self) -> str:
        """The base URL as it may be printed: credentials in it are redacted."""
        return redact_url(self.base_url)

    @property
    def root(self) -> str:
        """The server's address without the OpenAI `/v1` suffix: where its own endpoints live."""
        url = self.base_url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    def __repr__(self) -> str:  # never print the key
        return f"ServerConfig(base_url={self.shown_url!r}, model={self.model!r}, api_key={'set' if self.api_key else None})"


@dataclass(frozen=True)
class ServerInfo:
    """What the server says about itself at start-up."""

    family: str  # llama-server | vllm | llama-cpp-python | openai (anything else, e.g. Ollama)
    model: str
    models: tuple[str, ...]
    n_ctx: int | None = None  # llama-server /props, vLLM max_model_len
    n_params: int | None = None  # llama-server /v1/models meta
    chat_template: str | None = None  # llama-server /props
    bos_token: str = ""
    eos_token: str = ""

    @property
    def grammar_field(self) -> str | None:
        return GRAMMAR_FIELD.get(self.family)

    @property
    def tokenize_path(self) -> str | None:
        return {"llama-server": "/tokenize", "vllm": "/tokenize", "llama-cpp-python": "/extras/tokenize"}.get(self.family)


class ReplyTooLarge(httpx.HTTPError):
    """A reply body read whole ran past MAX_RESPONSE_BYTES."""

    def __init__(self, path: str) -> None:
        super().__init__(f"more than {MAX_RESPONSE_BYTES // 2**20} MiB for {path}")
        self.path = path


class _CappedBody(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, path: str) -> None:
        self.inner = inner
        self.path = path

    def __iter__(self):
        seen = 0
        for piece in self.inner:
            seen += len(piece)
            if seen > MAX_RESPONSE_BYTES:
                raise ReplyTooLarge(self.path)
            yield piece

    def close(self) -> None:
        self.inner.close()


class StreamTooLarge(httpx.HTTPError):
    """A streamed completion ran past MAX_EVENT_BYTES in one event or stream_byte_limit in all."""


class _CappedEvents(httpx.SyncByteStream):
    """A server-sent event stream, cut where one event or the whole stream grows past its cap."""

    def __init__(self, inner: httpx.SyncByteStream, max_tokens: int) -> None:
        self.inner = inner
        self.max_tokens = max_tokens

    def __iter__(self):
        limit, seen, event, tail = stream_byte_limit(self.max_tokens), 0, 0, b""
        for piece in self.inner:
            seen += len(piece)
            window = tail + piece  # an event's blank line may straddle two pieces
            end = max(window.rfind(b"\n\n"), window.rfind(b"\n\r\n"))
            event = len(window) - end - 2 if end >= 0 else event + len(piece)
            tail = window[-2:]
            if event > MAX_EVENT_BYTES:
                raise StreamTooLarge(f"more than {MAX_EVENT_BYTES // 2**20} MiB in one event")
            if seen > limit:
                raise StreamTooLarge(f"more than {limit // 2**10} KiB for an answer of at most {self.max_tokens} tokens")
            yield piece

    def close(self) -> None:
        self.inner.close()


class CappedTransport(httpx.BaseTransport):
    """HTTP, with every reply body cut at MAX_RESPONSE_BYTES, and a streamed completion's (read event by event) at
    MAX_EVENT_BYTES an event and stream_byte_limit(max_tokens) in all."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        inner = response.stream
        if not isinstance(inner, httpx.SyncByteStream):  # HTTPTransport's never is: it reads its socket in this thread
            raise TypeError(f"a synchronous transport got an asynchronous reply stream ({type(inner).__name__})")
        body = _streamed(request)
        stream: httpx.SyncByteStream
        if body is not None:
            max_tokens = body.get("max_tokens")
            stream = _CappedEvents(inner, max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else 4096)
        else:
            stream = _CappedBody(inner, request.url.path)
        return httpx.Response(response.status_code, headers=response.headers, extensions=response.extensions,
                              stream=stream)

    def close(self) -> None:
        self.inner.close()


def stream_byte_limit(max_tokens: int) -> int:
    """The most bytes a streamed completion of `max_tokens` tokens may send: room for the first and last events."""
    return 2 * MAX_EVENT_BYTES + max_tokens * STREAM_BYTES_PER_TOKEN


def _streamed(request: httpx.Request) -> dict | None:
    """The body of a streamed completion request; None for any other request."""
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except (ValueError, httpx.RequestNotRead):
        return None
    return body if isinstance(body, dict) and body.get("stream") is True else None


class ServerAPI:
    """One server: an OpenAI SDK client for /v1 and an httpx client for the server's own endpoints."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        timeout = httpx.Timeout(config.first_token_timeout, connect=config.connect_timeout)
        self.openai = openai.OpenAI(
            base_url=config.base_url, api_key=config.api_key or NO_KEY, max_retries=0, timeout=timeout,
            http_client=httpx.Client(transport=CappedTransport(), timeout=timeout),
        )
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self.http = httpx.Client(base_url=config.root, headers=headers, timeout=timeout, transport=CappedTransport())

    def close(self) -> None:
        self.openai.close()
        self.http.close()

    # -- the server's own endpoints ----------------------------------------------------------------------------

    def _send(self, method: str, path: str, body: dict | None = None) -> httpx.Response:
        """One request to the server; a connection failure is one line (explain)."""
        try:
            return self.http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise explain(exc, self.config) from None

    def get_json(self, path: str) -> dict | None:
        """GET an optional endpoint: its JSON, or None when the server has no such endpoint."""
        response = self._send("GET", path)
        if response.status_code in (401, 403):
            raise explain_status(response.status_code, response.text, self.config)
        return _json_object(response) if response.status_code == 200 else None

    def post_json(self, path: str, body: dict) -> dict:
        response = self._send("POST", path, body)
        if response.status_code != 200:
            raise explain_status(response.status_code, response.text, self.config)
        data = _json_object(response)
        if data is None:
            raise not_understood(path, response.text, self.config)
        return data

    def has_endpoint(self, path: str, body: dict) -> bool:
        return self._send("POST", path, body).status_code == 200

    # -- discovery ---------------------------------------------------------------------------------------------

    def discover(self) -> ServerInfo:
        """Which model the server runs, its family, context window and parameter count where it says."""
        entries = self.models()
        ids = tuple(e["id"] for e in entries)
        model = self.config.model
        if model is None:
            if len(ids) != 1:
                raise ServerRefused(
                    f"the server at {self.config.shown_url} serves {len(ids)} models ({', '.join(ids) or 'none'}): "
                    "name one with --model-name"
                )
            model = ids[0]
        elif model not in ids:
            raise ServerRefused(
                f"the server at {self.config.shown_url} has no model {model!r} (it serves: {', '.join(ids) or 'none'}): "
                "fix --model-name"
            )
        entry = entries[ids.index(model)]
        given = entry.get("meta")
        meta = given if isinstance(given, dict) else {}
        n_params = _int(meta.get("n_params"))
        props = self.get_json("/props")
        if props is not None and ("default_generation_settings" in props or "chat_template" in props):
            settings = props.get("default_generation_settings") or {}
            return ServerInfo(
                "llama-server", model, ids,
                n_ctx=_int(props.get("n_ctx")) or _int(settings.get("n_ctx")),
                n_params=n_params,
                chat_template=props.get("chat_template") or None,
                bos_token=str(props.get("bos_token") or ""),
                eos_token=str(props.get("eos_token") or ""),
            )
        if entry.get("owned_by") == "vllm" or "max_model_len" in entry:
            return ServerInfo("vllm", model, ids, n_ctx=_int(entry.get("max_model_len")), n_params=n_params)
        if self.has_endpoint("/extras/tokenize", {"input": "a", "model": model}):
            return ServerInfo("llama-cpp-python", model, ids, n_params=n_params)
        return ServerInfo("openai", model, ids, n_params=n_params)

    def models(self) -> list[dict]:
        """The entries of /v1/models, each a dict with a string id; one line when the reply is anything else."""
        response = self._send("GET", self.config.base_url.rstrip("/") + "/models")
        if response.status_code != 200:
            raise explain_status(response.status_code, response.text, self.config)
        data = _json_object(response)
        entries = data.get("data") if data is not None else None
        if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in entries):
            raise not_understood("/models", response.text, self.config)
        return entries


def _json_object(response: httpx.Response) -> dict | None:
    """The reply's body as a JSON object, or None when it is not one."""
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def not_understood(path: str, text: str, config: ServerConfig) -> ModelError:
    """One line for a reply that is not the JSON the endpoint documents, quoting the start of what came."""
    return ServerRefused(
        f"the model server at {config.shown_url} answered {path} with something else than the JSON expected "
        f"({sent(text)}): check that --base-url points at an OpenAI-compatible API (it ends in /v1)"
    )


def sent(text: str, limit: int = 80) -> str:
    """The start of what a server sent, on one line, fit to quote in an error."""
    flat = redact_url(" ".join(str(text).split()))
    return (flat[:limit] + "...") if len(flat) > limit else flat


def _int(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def explain(exc: BaseException, config: ServerConfig, streaming: bool = False) -> ModelError:
    """One line for a failed call: what happened at which URL, and what to do."""
    url = config.shown_url
    if isinstance(exc, openai.APIStatusError):
        return explain_status(exc.status_code, str(exc.message), config)
    cause = exc.__cause__ if isinstance(exc, openai.APIConnectionError) and exc.__cause__ is not None else exc
    if isinstance(cause, StreamTooLarge):
        if streaming:
            return ServerInterrupted(f"the model server at {url} sent {cause}: reading stopped there; the partial answer "
                                     "is kept, marked interrupted; check the server")
        return ServerRefused(f"the model server at {url} sent {cause}: reading stopped there; check the server")
    if isinstance(cause, ReplyTooLarge):
        return ServerRefused(f"the model server at {url} sent {cause}: that is no reply smoldocs can use; check --base-url")
    if isinstance(cause, httpx.ConnectTimeout):
        return ServerUnreachable(
            f"the model server at {url} did not accept a connection within {config.connect_timeout:g} s: "
            "check that it is running, or raise --connect-timeout"
        )
    if isinstance(cause, (httpx.ReadTimeout, openai.APITimeoutError)):
        return ServerUnreachable(
            f"the model server at {url} sent nothing for {config.first_token_timeout:g} s: "
            "it may be overloaded; raise --first-token-timeout or check the server"
        )
    if isinstance(cause, httpx.ConnectError) or type(exc) is openai.APIConnectionError and exc.__cause__ is None:
        return ServerUnreachable(
            f"cannot connect to the model server at {url} ({_reason(cause, config)}): start the server, or fix --base-url"
        )
    if streaming or isinstance(cause, (httpx.RemoteProtocolError, httpx.ReadError)):
        return ServerInterrupted(
            f"the model server at {url} stopped answering mid-stream ({_reason(cause, config)}): "
            "the partial answer is kept, marked interrupted; check the server and ask again"
        )
    return ServerUnreachable(f"the model server at {url} failed ({_reason(cause, config)}): check the server and --base-url")


def explain_status(status: int, detail: str, config: ServerConfig) -> ModelError:
    url = config.shown_url
    detail = scrub(detail, config.base_url)[:160]
    if status in (401, 403):
        return ServerRefused(
            f"the model server at {url} refused the API key (HTTP {status}): "
            "set SMOLDOCS_API_KEY (or api_key_file in config.toml) to a key it accepts"
        )
    if status == 404:
        return ServerRefused(
            f"the model server at {url} has no model {config.model!r} or no such endpoint (HTTP 404): "
            "check --model-name and that --base-url ends in /v1"
        )
    if status >= 500:
        return ServerRefused(f"the model server at {url} failed (HTTP {status}: {detail}): check its log and ask again")
    return ServerRefused(f"the model server at {url} rejected the request (HTTP {status}: {detail})")


def _reason(exc: BaseException, config: ServerConfig) -> str:
    text = scrub(str(exc), config.base_url)
    if "refused" in text.lower():
        return "connection refused"
    return text[:120] or type(exc).__name__
