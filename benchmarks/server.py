"""The HTTP hop: time to first token and decode speed through a local model server vs the same model in-process.

The server is llama-cpp-python's own (`python -m llama_cpp.server`, the `server` extra) on 127.0.0.1, running the
packaged SmolLM2 GGUF with the same decode threads; both sides get the same messages, options and seed, and are
timed the same way, by our layer's GenerationStats. Run alone: .venv/bin/python -m benchmarks --only server
"""

from __future__ import annotations

from dataclasses import replace

from benchmarks import workload
from benchmarks.measure import interleaved, median
from benchmarks.table import row

SECTION = "server"


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: four tokens once each side, to prove the module runs."""
    from models.openai_server.local_server import LocalServer
    from models.openai_server.server import ServerChatModel
    from models.openai_server.server_api import ServerConfig

    local = workload.chat_model()
    messages, recorded = workload.answer_prompt(k=1 if smoke else 5)
    options = replace(recorded, grammar=None, guard=None, max_tokens=4 if smoke else 24 if quick else 128)
    repeats = 1 if smoke else 3 if quick else 6
    threads = local.config.llama_kwargs()["n_threads"]
    with LocalServer(local.config.path, n_ctx=local.n_ctx, n_threads=threads) as server:
        remote = ServerChatModel(ServerConfig(server.base_url, tokenizer=local.config.path))
        try:
            probes = [remote.probe_ms] + [remote.check_counts() for _ in range(repeats - 1)]
            samples: dict[str, list] = {"remote": [], "local": []}

            def measure(model, key):
                def once() -> float:
                    for _ in model.stream(messages, options):
                        pass
                    stats = model.last_stats
                    samples[key].append((stats.time_to_first_token, stats.completion_tokens))
                    return stats.tokens_per_second

                return once

            measure(remote, "remote")(), measure(local, "local")()  # warm-up: the prompt is in both KV caches
            samples["remote"].clear(), samples["local"].clear()
            a, b = interleaved(measure(remote, "remote"), measure(local, "local"), repeats)
        finally:
            remote.close()
    n_prompt = local.tokenizer.count_chat(messages)
    tokens = median([n for _, n in samples["remote"]])
    rows = [
        row(f"decode tokens/s through llama_cpp.server vs in-process, {n_prompt}-token prompt, {tokens:.0f} tokens",
            median(a), median(b), "ratio >= 0.9", unit="tok/s",
            note="same GGUF, decode threads, options and seed; the server re-evaluates no prefix it holds"),
        row("time to first token through the server vs in-process (warm prefix)",
            1000 * median([t for t, _ in samples["remote"]]), 1000 * median([t for t, _ in samples["local"]]),
            "info: the HTTP hop and the server's request handling", unit="ms"),
        row("start-up count check: render + count a probe prompt, 1-token completion, compare usage",
            median(probes), None, "info", unit="ms"),
    ]  # fmt: skip
    for r in rows:
        r["section"] = SECTION
    return rows
