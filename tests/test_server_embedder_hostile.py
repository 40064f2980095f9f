"""The embeddings server backend against a hostile server on 127.0.0.1: errors that would print the URL's secrets,
rows of the wrong count or width, vectors that are not finite. Each must end in one line naming the (redacted) server."""

from __future__ import annotations

import http.server
import json
import threading

import numpy as np
import pytest

from models.errors import ModelError, ServerRefused, ServerUnreachable
from models.openai_server.local_server import free_port
from models.openai_server.server_embedder import ServerEmbedder

DIM = 4
SECRETS = ("eSECRET", "QSECRET")


class HostileEmbeddings(http.server.BaseHTTPRequestHandler):
    """A /v1/embeddings that answers the start-up probe well, then as `self.server.mode` says."""

    protocol_version = "HTTP/1.1"

    def _json(self, status: int, body) -> None:
        data = json.dumps(body).encode()  # allow_nan: Python writes NaN and Infinity as bare words, as some servers do
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # the model list, wherever the query string put the path
        if self.server.mode == "401":
            return self._json(401, {"error": {"message": f"bad key for {self.path}"}})
        self._json(200, {"object": "list", "data": [{"id": "emb", "object": "model", "owned_by": "me"}]})

    def do_POST(self):
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        mode = self.server.mode
        if texts == ["dimension"] and mode not in ("401", "500"):  # the start-up probe of the width
            mode = "good"
        if mode in ("401", "500"):  # a server that echoes the request line, secrets and all
            return self._json(int(mode), {"error": {"message": f"failed on POST {self.path}"}})
        rows = [[1.0] * DIM for _ in texts]
        if mode == "rows":
            rows = rows[:-1]
        elif mode == "width":
            rows[-1] = rows[-1][:-1]
        elif mode == "wider":
            rows = [[1.0] * (DIM + 2) for _ in texts]
        elif mode == "text":
            rows[-1][0] = "abc"
        elif mode == "empty":
            rows = [[] for _ in texts]
        elif mode in ("nan", "null", "huge"):
            rows[-1][1] = {"nan": float("nan"), "null": None, "huge": 1e39}[mode]
        self._json(200, {"object": "list", "model": "emb", "data": [
            {"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]})

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def hostile():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HostileEmbeddings)
    server.daemon_threads = True
    server.mode = "good"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def _secret_url(port: int) -> str:
    return f"http://user:eSECRET@127.0.0.1:{port}/v1?api_key=QSECRET"


def _one_line(err: BaseException, port: int) -> str:
    text = str(err)
    assert isinstance(err, ModelError) and "\n" not in text, text
    assert not any(secret in text for secret in SECRETS), text
    assert f"http://***@127.0.0.1:{port}/v1?api_key=***" in text, text
    return text


def test_connection_refused_does_not_print_the_urls_secrets():
    port = free_port()
    with pytest.raises(ServerUnreachable) as err:
        ServerEmbedder(_secret_url(port), retries=0)
    assert "connection refused" in _one_line(err.value, port)


@pytest.mark.parametrize("mode, fragment", [("401", "refused the API key"), ("500", "HTTP 500")])
def test_an_error_status_does_not_print_the_urls_secrets(hostile, mode, fragment):
    hostile.mode = mode
    port = hostile.server_address[1]
    with pytest.raises(ServerRefused) as err:
        ServerEmbedder(_secret_url(port), retries=0)
    assert fragment in _one_line(err.value, port)


@pytest.mark.parametrize(
    "mode, fragment",
    [("rows", "2 rows for 3 texts"), ("width", "3 numbers, not 4"), ("wider", "6 numbers, not 4"),
     ("nan", "not a finite number"), ("null", "not a finite number"), ("huge", "not a finite number"),
     ("text", "not a list of numbers"), ("empty", "not a list of numbers")],
)
def test_rows_of_the_wrong_count_width_or_value_are_refused_in_one_line(hostile, mode, fragment):
    hostile.mode = "good"
    port = hostile.server_address[1]
    embedder = ServerEmbedder(_secret_url(port), retries=0)
    assert embedder.embed(["a", "b", "c"]).shape == (3, DIM)
    hostile.mode = mode
    with pytest.raises(ServerRefused) as err:
        embedder.embed(["a", "b", "c"])
    assert fragment in _one_line(err.value, port)
    embedder.close()


def test_good_rows_come_back_normalized_and_finite(hostile):
    hostile.mode = "good"
    embedder = ServerEmbedder(f"http://127.0.0.1:{hostile.server_address[1]}/v1", retries=0)
    rows = embedder.embed(["a", "b"])
    assert np.isfinite(rows).all() and np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    embedder.close()
