"""The server backend against a hostile model server on 127.0.0.1: endless bodies, keep-alive comments instead of
tokens, replies of the wrong shape, credentials in the URL. Each must end in one line naming the server."""

from __future__ import annotations

import http.server
import json
import resource
import socket
import threading
import time

import pytest

from models.errors import ModelError, ServerInterrupted, ServerUnreachable
from models.openai_server.local_server import free_port
from models.locate import default_model_path
from models.protocols import GenerationOptions
from models.openai_server.server import PROBE, ServerChatModel
from models.openai_server.server_api import MAX_EVENT_BYTES, MAX_RESPONSE_BYTES, ServerConfig, stream_byte_limit

pytestmark = pytest.mark.real

CHAT = [{"role": "user", "content": "What is a KV cache?"}]
HUGE_TOKEN_BYTES = 20 * 2**20  # the probe's one 20 MB token


def _event(text: str) -> bytes:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": None}
    body = {"id": "c", "object": "text_completion", "created": 0, "model": "hostile", "choices": [choice]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"
MODEL_LIST = {"object": "list", "data": [{"id": "hostile", "object": "model", "owned_by": "me"}]}


class Hostile(http.server.BaseHTTPRequestHandler):
    """Behaves well enough to be connected to, then misbehaves as `self.server.mode` says."""

    protocol_version = "HTTP/1.1"

    def _json(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _raw(self, content_type: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _endless(self, content_type: str, head: bytes, piece: bytes, pause: float = 0.0, stop_after: int = 0,
                 tail: bytes = b"") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")  # no length: the body ends when the connection does
        self.end_headers()
        self.close_connection = True
        ended = time.monotonic() + 60
        try:
            self.wfile.write(head)
            sent = 0
            while time.monotonic() < ended and not self.server.stopping.is_set():
                if stop_after and sent == stop_after:
                    self.wfile.write(tail)
                    break
                sent += 1
                self.wfile.write(piece)
                self.wfile.flush()
                if pause:
                    time.sleep(pause)
        except OSError:
            pass  # the client gave up: that is what the test wants

    def do_GET(self):
        mode = self.server.mode
        if self.path != "/v1/models":
            return self._json(404, {"error": {"message": "not found"}})
        if mode == "endless-models":
            return self._endless("application/json", b'{"object": "list", "data": [', b'{"id": "x"},' * 4096)
        if mode == "html-models":
            return self._raw("application/json", b"<html><body>502 Bad Gateway</body></html>")
        if mode == "text-models":
            return self._raw("text/plain", b"hello")
        if mode == "shapeless-models":
            return self._json(200, {"object": "list", "data": 5})
        return self._json(200, MODEL_LIST)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/completions":
            return self._json(404, {"error": {"message": "not found"}})
        if not body.get("stream") and self.server.mode == "text-probe":  # the SDK hands a text reply back as a str
            return self._raw("text/plain", b"hello")
        if not body.get("stream"):  # the start-up probe: agree on the count
            usage = {"prompt_tokens": self.server.probe_tokens, "completion_tokens": 1, "total_tokens": 0}
            choice = {"text": "OK", "index": 0, "finish_reason": "length", "logprobs": None}
            return self._json(200, {"id": "c", "object": "text_completion", "created": 0, "model": "hostile",
                                    "choices": [choice], "usage": usage})  # fmt: skip
        mode = self.server.mode
        if mode == "keep-alive":
            return self._endless("text/event-stream", b"", b": keep-alive\n\n", pause=0.2)
        if mode == "one-then-keep-alive":
            return self._endless("text/event-stream", _event("The frobnicator"), b": keep-alive\n\n", pause=0.2)
        if mode == "trickle":  # a token every 0.3 s, never finishing
            return self._endless("text/event-stream", b"", _event(" more"), pause=0.3)
        if mode == "endless-tokens":  # far more than max_tokens, as fast as the socket takes them
            return self._endless("text/event-stream", b"", _event(" word") * 64)
        if mode == "huge-token":  # sent a MiB at a time, so the server's own memory does not blur the client's
            head, tail = _event("\0").split(b"\\u0000")
            self._endless("text/event-stream", head, b"x" * 2**20, stop_after=HUGE_TOKEN_BYTES // 2**20,
                          tail=tail + b"data: [DONE]\n\n")
            return
        events = {
            "wrong-shape": b'data: {"id": "c", "object": "text_completion", "created": 0, "model": "hostile", '
                           b'"choices": [], "usage": 5}\n\n',
            "bad-choice": b'data: {"id": "c", "object": "text_completion", "created": 0, "model": "hostile", '
                          b'"choices": [{"index": 0, "text": 7}]}\n\n',
            "not-json": b"data: {'text': oops\n\n",
        }[mode]
        self._raw("text/event-stream", events + b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def hostile(real_tokenizer):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    server.mode = "good"
    server.stopping = threading.Event()
    server.probe_tokens = real_tokenizer.count_chat(PROBE)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.stopping.set()
    server.shutdown()


def _url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def _one_line(err: BaseException, url: str) -> str:
    text = str(err)
    assert isinstance(err, ModelError) and "\n" not in text and url in text, text
    return text


def test_an_endless_models_body_is_cut_at_the_cap(hostile):
    hostile.mode = "endless-models"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    started = time.monotonic()
    with pytest.raises(ModelError) as err:
        ServerChatModel(ServerConfig(_url(hostile), tokenizer=default_model_path()))
    seconds = time.monotonic() - started
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    text = _one_line(err.value, _url(hostile))
    assert f"more than {MAX_RESPONSE_BYTES // 2**20} MiB" in text and "/models" in text
    assert seconds < 20 and grown_mib < 8 * MAX_RESPONSE_BYTES / 2**20, (seconds, grown_mib)
    print(f"endless /v1/models: refused after {seconds:.2f} s, peak RSS grew {grown_mib:.0f} MiB")


@pytest.mark.parametrize(
    "mode, fragment",
    [
        ("html-models", "<html><body>502 Bad Gateway"),
        ("text-models", "hello"),
        ("shapeless-models", '"data": 5'),
    ],
)
def test_a_models_reply_that_is_not_a_model_list_is_one_line(hostile, mode, fragment):
    hostile.mode = mode
    with pytest.raises(ModelError) as err:
        ServerChatModel(ServerConfig(_url(hostile), tokenizer=default_model_path()))
    text = _one_line(err.value, _url(hostile))
    assert "/models" in text and fragment in text


def test_a_probe_reply_that_is_not_json_is_one_line(hostile):
    """It once reached `reply.usage` on the str the SDK returns and left an AttributeError's traceback."""
    hostile.mode = "text-probe"
    with pytest.raises(ModelError) as err:
        ServerChatModel(ServerConfig(_url(hostile), tokenizer=default_model_path()))
    text = _one_line(err.value, _url(hostile))
    assert "/completions" in text and "(hello)" in text, text


@pytest.fixture(scope="module")
def model(hostile):
    hostile.mode = "good"
    model = ServerChatModel(ServerConfig(_url(hostile), tokenizer=default_model_path(), first_token_timeout=1.5))
    yield model
    model.close()


def test_keep_alive_comments_do_not_hold_off_the_first_token_timeout(hostile, model):
    hostile.mode = "keep-alive"
    started = time.monotonic()
    with pytest.raises(ServerUnreachable) as err:
        list(model.stream(CHAT, GenerationOptions(max_tokens=8)))
    seconds = time.monotonic() - started
    text = _one_line(err.value, _url(hostile))
    assert "no answer within 1.5 s" in text and "--first-token-timeout" in text
    assert 1.4 < seconds < 5, seconds
    assert model.last_stats.finish_reason == "error"


@pytest.fixture(scope="module")
def timed(hostile):
    hostile.mode = "good"
    # The first token's deadline is far from the next one's: a token must bring the watch's wake-up forward.
    config = ServerConfig(_url(hostile), tokenizer=default_model_path(), first_token_timeout=20.0, token_timeout=1.0,
                          answer_timeout=3.0)
    model = ServerChatModel(config)
    yield model
    model.close()


def _partial(model, max_tokens: int = 8) -> tuple[list[str], BaseException, float]:
    pieces, started = [], time.monotonic()
    with pytest.raises(ModelError) as err:
        for piece in model.stream(CHAT, GenerationOptions(max_tokens=max_tokens)):
            pieces.append(piece)
    return pieces, err.value, time.monotonic() - started


def test_keep_alive_comments_after_the_first_token_hit_the_token_timeout(hostile, timed):
    hostile.mode = "one-then-keep-alive"
    pieces, err, seconds = _partial(timed)
    text = _one_line(err, _url(hostile))
    assert pieces == ["The frobnicator"] and isinstance(err, ServerInterrupted)
    assert "no token for 1 s" in text and "--token-timeout" in text and "partial answer is kept" in text
    assert 0.9 < seconds < 2.5, seconds
    assert timed.last_stats.finish_reason == "interrupted"


def test_a_trickle_of_tokens_hits_the_answer_timeout(hostile, timed):
    hostile.mode = "trickle"
    pieces, err, seconds = _partial(timed, max_tokens=1000)
    text = _one_line(err, _url(hostile))
    assert pieces and set(pieces) == {" more"} and isinstance(err, ServerInterrupted)
    assert "within 3 s" in text and "--answer-timeout" in text
    assert 2.9 < seconds < 6, seconds


def test_one_huge_token_is_refused_at_the_event_cap_without_reading_it(hostile, model):
    hostile.mode = "huge-token"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    pieces, err, seconds = _partial(model, max_tokens=256)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    text = _one_line(err, _url(hostile))
    assert pieces == [] and f"more than {MAX_EVENT_BYTES // 2**20} MiB in one event" in text, text
    assert grown_mib < 64 and seconds < 10, (grown_mib, seconds)
    assert model.last_stats.completion_tokens == 0


def test_a_stream_far_longer_than_max_tokens_is_cut(hostile, model):
    hostile.mode = "endless-tokens"
    pieces, err, seconds = _partial(model, max_tokens=8)
    text = _one_line(err, _url(hostile))
    assert pieces and isinstance(err, ServerInterrupted) and "for an answer of at most 8 tokens" in text, text
    assert len("".join(pieces).encode()) <= stream_byte_limit(8) and seconds < 10


@pytest.mark.parametrize(
    "mode, fragment",
    [
        ("wrong-shape", "usage: 5"),
        ("bad-choice", "text: 7"),
        ("not-json", "{'text': oops"),
    ],
)
def test_a_stream_event_of_the_wrong_shape_is_one_line(hostile, model, mode, fragment):
    hostile.mode = mode
    with pytest.raises(ModelError) as err:
        list(model.stream(CHAT, GenerationOptions(max_tokens=8)))
    text = _one_line(err.value, _url(hostile))
    assert fragment in text, text


def test_credentials_in_the_base_url_are_never_printed():
    url = f"http://alice:hunter2@127.0.0.1:{free_port()}/v1"
    with pytest.raises(ServerUnreachable) as err:
        ServerChatModel(ServerConfig(url, tokenizer=default_model_path()))
    text = str(err.value)
    assert "hunter2" not in text and "alice" not in text and "http://***@127.0.0.1" in text
    assert "hunter2" not in repr(ServerConfig(url))


def test_a_silent_listener_still_times_out_on_connect_and_first_byte():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        with pytest.raises(ServerUnreachable, match="sent nothing for 0.5 s"):
            ServerChatModel(ServerConfig(url, first_token_timeout=0.5, tokenizer=default_model_path()))
