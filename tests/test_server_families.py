"""Discovery of what a server offers, against a local stand-in for llama-server's own endpoints.

No llama-server binary is installed here, so a small loopback server answers /v1/models, /props, /tokenize,
/detokenize and a non-streamed /v1/completions the way llama-server documents them, tokenizing with the real
SmolLM2 tokenizer. It pins our side: the template from /props, counts through /tokenize, n_ctx and the parameter
count from the server, and the `auto` policy that follows.
"""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from agent.session import ChatSession
from agent.settings import AgentSettings
from models.openai_server.server import ServerChatModel
from models.openai_server.server_api import ServerConfig

pytestmark = pytest.mark.real


def _handler(tokenizer, n_params: int, n_ctx: int):
    llm = tokenizer._llm
    model = llm._model
    props = {
        "default_generation_settings": {"n_ctx": n_ctx},
        "chat_template": llm.metadata["tokenizer.chat_template"],
        "bos_token": model.token_get_text(model.token_bos()),
        "eos_token": model.token_get_text(model.token_eos()),
    }

    def tokenize(text: str, add_special: bool) -> list[int]:
        return llm.tokenize(text.encode(), add_bos=add_special and model.add_bos_token(), special=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                meta = {"n_params": n_params, "n_ctx_train": 8192}
                self._send(200, {"object": "list", "data": [{"id": "smollm2", "object": "model", "owned_by": "llamacpp", "meta": meta}]})
            elif self.path == "/props":
                self._send(200, props)
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/tokenize":
                self._send(200, {"tokens": tokenize(body["content"], body.get("add_special", False))})
            elif self.path == "/detokenize":
                self._send(200, {"content": llm.detokenize(body["tokens"]).decode()})
            elif self.path == "/v1/completions" and not body.get("stream"):
                usage = {"prompt_tokens": len(tokenize(body["prompt"], True)), "completion_tokens": 1, "total_tokens": 0}
                choice = {"text": "OK", "index": 0, "finish_reason": "length", "logprobs": None}
                self._send(200, {"id": "c", "object": "text_completion", "created": 0, "model": "smollm2",
                                 "choices": [choice], "usage": usage})  # fmt: skip
            else:
                self._send(404, {"error": {"message": "not found"}})

        def log_message(self, *args):
            pass

    return Handler


@pytest.fixture
def llama_server_like(real_tokenizer):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(real_tokenizer, 1_700_000_000, 8192))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_llama_server_tokenizer_template_window_and_size_come_from_the_server(llama_server_like, real_tokenizer):
    model = ServerChatModel(ServerConfig(llama_server_like))  # no --tokenizer: the server's own endpoints
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is a KV cache?"}]
    assert model.info.family == "llama-server" and model.supports_grammar
    assert (model.n_ctx, model.n_ctx_source, model.n_params) == (8192, "server", 1_700_000_000)
    assert model.tokenizer.render_chat(messages) == real_tokenizer.render_chat(messages)
    assert model.tokenizer.count_chat(messages) == real_tokenizer.count_chat(messages)
    assert model.tokenizer.count("hello wor" + "ld again") == real_tokenizer.count("hello world again")
    assert model.probe_ms > 0  # the probe's count matched the stand-in's usage


def test_auto_policy_follows_the_reported_size_and_budgets_the_window(llama_server_like, real_index):
    model = ServerChatModel(ServerConfig(llama_server_like))
    session = ChatSession(model, real_index, settings=AgentSettings(policy="auto"))
    assert session.policy == "model"  # 1.7B parameters, as the server reports them
    assert session.n_ctx == 8192 and session.agent.window.budgets.evidence_max == 4096
    assert "tools: model" in session.backend_note
