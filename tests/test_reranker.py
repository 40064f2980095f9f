"""The cross-encoder (issue #37): the numpy scorer, its parity with the PyTorch model, the training command,
and the quotes and declines it decides."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from models.errors import ModelNotFound
from models.reranker import RERANKER_FILE, CrossEncoder, load_reranker, pair_ids, read_reranker
from rag.answering.extractive import QuoteFallback
from rag.citations import Citation
from rag.types import Chunk, Hit

PAIRS = [
    ("How do I make ls sort by modification time?", "Sort by time: -t sorts by modification time, newest first."),
    ("How do I make ls sort by modification time?", "The colour of directories is set by LS_COLORS."),
    ("What does the KV cache store?", "The KV cache stores the keys and values of every earlier token."),
    ("What does the KV cache store?", "Min-p sampling keeps tokens above a share of the top probability."),
    ("Can I resume a stopped download?", "Use --continue to resume getting a partially-downloaded file."),
    ("Can I resume a stopped download?", "Downloads are written to the current directory by default."),
    ("which port does the server listen on", "Configuration: The server listens on port 8080 unless --port is given."),
    ("which port does the server listen on", "Logging: Errors are written to standard error."),
    ("how to disable the cache", "Caching: Set cache = false in the settings file to turn the cache off."),
    ("how to disable the cache", "Themes: Dark and light themes are available."),
    ("What is BM25?", "BM25 ranks documents by term frequency and inverse document frequency."),
    ("What is BM25?", "x " * 400),  # cut at the window
    ("", "An empty question still scores."),
    ("a " * 200, "A long question is cut to its first tokens."),
    ("Wie geht das?", "Unicode: naïve café 日本語 — ok."),
    ("tabs\tand\nnewlines", "control \x1b[31m characters"),
    ("How are fields separated?", "Fields are separated by ` ` (a single space)."),
    ("one", "two"),
    ("What does --force do?", "--force overwrites existing files without asking."),
    ("What does --force do?", "--quiet prints nothing."),
]


@pytest.fixture(scope="module")
def shipped(real_embedder):
    return load_reranker(real_embedder.tokenize)


@pytest.mark.real
def test_the_shipped_reranker_loads_and_scores_with_the_real_file(shipped):
    weights, meta = read_reranker()
    assert RERANKER_FILE.stat().st_size <= 25_000_000
    assert {"minilm_sha256", "max_tokens", "answer_logit", "trained_on"} <= set(meta)
    assert "git-doc" not in meta["trained_on"] and "python3-doc" not in meta["trained_on"]  # fit packages only
    scores = shipped.score(PAIRS[0][0], [PAIRS[0][1], PAIRS[1][1]])
    assert scores.dtype == np.float32 and scores.shape == (2,) and np.isfinite(scores).all()
    assert scores[0] > scores[1]  # the sentence that answers scores above the one that does not


@pytest.mark.real
def test_scores_follow_the_answer_not_the_order(shipped):
    good = [PAIRS[i][1] for i in (0, 2, 4, 8)]
    for i, q in enumerate([PAIRS[i][0] for i in (0, 2, 4, 8)]):
        scores = shipped.score(q, good)
        assert int(np.argmax(scores)) == i, (q, scores)


@pytest.mark.real
def test_numpy_scores_match_pytorch_on_20_pairs(real_embedder, tmp_path):
    torch = pytest.importorskip("torch", reason="the training extra: pip install -e '.[train]'")
    from benchmarks.realdocs.train_reranker import batch_tensors, torch_model, write_safetensors
    from models.llama_cpp.bert_gguf import minilm_zip

    weights, meta = read_reranker()
    model = torch_model(int(meta["layers"]), minilm_zip())
    state = {k: torch.tensor(v) for k, v in weights.items()}
    with torch.no_grad():  # the shipped float16 weights, widened, in the PyTorch model
        for name, value in model.tensors().items():
            assert value.shape == weights[name].shape, name
        _load_into(model, state)
    scorer = load_reranker(real_embedder.tokenize)
    encoded = [scorer.pair_ids(q, p) for q, p in PAIRS]
    with torch.no_grad():
        expected = model(*batch_tensors(encoded)).numpy()
    got = np.concatenate([scorer.score(q, [p]) for q, p in PAIRS])
    assert np.abs(got - expected).max() < 1e-3, (got, expected)
    # and the copy written back reads the same
    write_safetensors(tmp_path / "r.safetensors", model.tensors(), dict(meta))
    again = load_reranker(real_embedder.tokenize, tmp_path / "r.safetensors")
    assert np.allclose(again.score(PAIRS[0][0], [PAIRS[0][1]]), got[:1], atol=1e-3)


def _load_into(model, state):
    model.positions.copy_(state["embeddings.position_embeddings.weight"])
    model.types.copy_(state["embeddings.token_type_embeddings.weight"])
    model.ln.weight.copy_(state["embeddings.LayerNorm.weight"])
    model.ln.bias.copy_(state["embeddings.LayerNorm.bias"])
    model.head.weight.copy_(state["head.weight"])
    model.head.bias.copy_(state["head.bias"])
    import torch

    for i, layer in enumerate(model.layers):
        p = f"encoder.layer.{i}."
        layer.qkv.weight.copy_(torch.cat([state[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]))
        layer.qkv.bias.copy_(torch.cat([state[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]))
        for mod, name in ((layer.out, "attention.output.dense"), (layer.up, "intermediate.dense"),
                          (layer.down, "output.dense"), (layer.ln1, "attention.output.LayerNorm"),
                          (layer.ln2, "output.LayerNorm")):
            mod.weight.copy_(state[p + name + ".weight"])
            mod.bias.copy_(state[p + name + ".bias"])


def test_pairs_are_cut_to_the_window_question_first():
    def tokenize(text):  # [CLS]=1 ... [SEP]=2, one id per word
        return [1, *(10 + len(w) for w in text.split()), 2]

    ids, types = pair_ids(tokenize, "a b c", "x " * 500, 16, 1, 2)
    assert len(ids) == 16 and ids[0] == 1 and ids[4] == 2 and ids[-1] == 2
    assert types == [0] * 5 + [1] * 11
    ids, _ = pair_ids(tokenize, "q " * 500, "p " * 500, 16, 1, 2)
    assert len(ids) == 16 and ids[-1] == 2 and ids.index(2) == 9  # a long question takes half the window at most


def test_a_damaged_reranker_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "r.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(ModelNotFound, match="--rerank off"):
        read_reranker(bad)
    with pytest.raises(ModelNotFound):
        read_reranker(tmp_path / "missing.safetensors")


class FakeReranker:
    """Scores a passage by the number of question words it holds, minus 2: the decline line is at 0."""

    answer_logit = 0.0
    reads = "sentences"

    def __init__(self):
        self.calls = []

    def score(self, question, passages):
        self.calls.append(list(passages))
        words = set(question.lower().replace("?", "").split()) - {"the", "is", "a", "of", "what", "how", "by"}
        return np.array([len(words & set(p.lower().replace(".", "").replace(":", " ").split())) - 2.0 for p in passages],
                        dtype=np.float32)


CHUNKS = {
    "a.md#0": Chunk("a.md#0", "a.md", "a.md", "The theme colour is blue. The cache timeout is ten minutes by default.", ("Settings",), 1, 2),
    "b.md#0": Chunk("b.md#0", "b.md", "b.md", "Logs rotate every day. Old logs are compressed with gzip.", ("Logs",), 1, 2),
}
SHOWN = {1: Citation(1, "a.md#0", "a.md", "a.md"), 2: Citation(2, "b.md#0", "b.md", "b.md")}


def test_by_default_the_answerability_rule_declines_and_the_reranker_only_orders(monkeypatch):
    import rag.answering.extractive as extractive

    from collections import Counter

    from rag.retrieval.terms import index_terms
    from rag.retrieval.vocabulary import TermCounts

    monkeypatch.setattr(extractive, "DECLINE_BY", "rule")
    fake = FakeReranker()
    fake.answer_logit = 100.0  # would decline everything if it decided
    # the index's term counts, as every session gives the rule
    vocabulary = TermCounts.of(Counter(t for c in CHUNKS.values() for t in set(index_terms(c.text))), len(CHUNKS))
    answer = QuoteFallback(None, vocabulary, fake)("how long is the cache timeout by default?", SHOWN, CHUNKS.get)
    assert answer is not None and "cache timeout is ten minutes" in answer.text.split("\n\n")[1]
    assert QuoteFallback(None, vocabulary, fake)("what is the capital of peru?", SHOWN, CHUNKS.get) is None  # the rule's no


def test_the_reranker_orders_the_quotes():
    fake = FakeReranker()
    answer = QuoteFallback(None, None, fake)("how long is the cache timeout by default?", SHOWN, CHUNKS.get)
    assert answer is not None
    first = answer.text.split("\n\n")[1]
    assert "cache timeout is ten minutes" in first and first.endswith("[1]")
    assert all(text.startswith(("Settings: ", "Logs: ")) for text in fake.calls[0])  # read under the heading path


def test_nothing_reaching_the_answer_logit_is_a_decline(monkeypatch):
    import rag.answering.extractive as extractive

    monkeypatch.setattr(extractive, "DECLINE_BY", "reranker")
    fake = FakeReranker()
    assert QuoteFallback(None, None, fake)("what is the capital of peru?", SHOWN, CHUNKS.get) is None
    fake.answer_logit = -5.0  # a lower line answers with what scores best
    assert QuoteFallback(None, None, fake)("what is the capital of peru?", SHOWN, CHUNKS.get) is not None


@pytest.mark.real
def test_shipped_reranker_quotes_and_declines_on_a_small_real_folder(shipped, real_tokenizer, real_embedder, tmp_path):
    from rag.excerpts.packing import Ledger
    from rag.excerpts.search_tool import search_first
    from rag.indexing.build import open_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "server.md").write_text(
        "# Server\n\n## Port\n\nThe server listens on port 8080 unless you pass --port.\n\n"
        "## Logs\n\nErrors are written to standard error. Access logs are off by default.\n", encoding="utf-8")
    (docs / "client.md").write_text(
        "# Client\n\n## Retries\n\nThe client retries a failed request three times, waiting two seconds between tries.\n\n"
        "## Proxy\n\nSet HTTPS_PROXY to send requests through a proxy.\n", encoding="utf-8")
    index = open_index(docs, real_tokenizer, real_embedder, index_dir=tmp_path / "ix")

    def ask(question):
        result = search_first(index, Ledger(), real_tokenizer, question, 5)
        return QuoteFallback(real_embedder, index.vocabulary, shipped)(question, {c.n: c for c in result.citations}, index.chunk)

    answer = ask("How many times does the client retry when a request fails?")
    assert answer is not None and "three times" in answer.text.split("\n\n")[1]
    answer = ask("Which port does the server listen on?")
    assert answer is not None and "8080" in answer.text.split("\n\n")[1]
    assert ask("How do I install the Windows version with a graphical wizard?") is None


def _hit(chunk_id, text, heading, score):
    return Hit(Chunk(chunk_id, chunk_id.split("#")[0], chunk_id.split("#")[0], text, (heading,)), score)


def test_passages_are_reordered_by_their_best_sentences_blended_with_the_hybrid_rank():
    from rag.answering.passages import PassageReranker, rerank_hits

    hits = [_hit("a.md#0", "Themes are blue. Fonts are large.", "Look", 0.9),
            _hit("b.md#0", "Logs rotate daily. Old logs are kept.", "Logs", 0.8),
            _hit("c.md#0", "The cache timeout is ten minutes by default.", "Cache", 0.7)]
    fake = FakeReranker()
    out = rerank_hits("what is the cache timeout by default?", hits, fake, 2)
    # the hybrid's first and the reranker's first share the top two (the two orders count alike); b is left out
    assert [h.chunk_id for h in out] == ["a.md#0", "c.md#0"]
    assert PassageReranker(fake).pool >= 10


def test_a_passage_model_reads_each_chunk_whole_under_its_heading_path(monkeypatch):
    import rag.answering.passages as passages
    from rag.answering.passages import PASSAGE_CHARS, rerank_hits

    monkeypatch.setattr(passages, "HYBRID_WEIGHT", 0.5)  # the reranker's order counts more: its first leads

    long_tail = " filler" * 400
    hits = [_hit("a.md#0", "Themes are blue. Fonts are large.", "Look", 0.9),
            _hit("c.md#0", "Caching.\n\nThe   cache timeout is ten minutes by default." + long_tail, "Cache", 0.7)]
    fake = FakeReranker()
    fake.reads = "passages"
    out = rerank_hits("what is the cache timeout by default?", hits, fake, 2)
    assert [h.chunk_id for h in out] == ["c.md#0", "a.md#0"]
    assert fake.calls == [["Look: Themes are blue. Fonts are large.",
                           ("Cache: Caching. The cache timeout is ten minutes by default." + long_tail)[:len("Cache: ") + PASSAGE_CHARS]]]


def test_search_first_asks_the_reorder_hook_for_a_pool_and_packs_its_choice(real_tokenizer):
    from rag.excerpts.packing import Ledger
    from rag.excerpts.search_tool import search_first

    hits = [_hit(f"d{i}.md#0", f"Sentence number {i} about things.", f"H{i}", 1.0 - i / 100) for i in range(30)]

    class Retriever:
        doc_ids = None
        vocabulary = None  # no term counts: the query is searched as written

        def search(self, query, k=5, doc_ids=None):
            self.asked = k
            return hits[:k]

    class Reverse:
        pool = 25

        def __call__(self, query, got, k):
            assert len(got) == 25
            return list(reversed(got))[:k]

    retriever = Retriever()
    result = search_first(retriever, Ledger(), real_tokenizer, "things", 3, reorder=Reverse())
    assert retriever.asked == 25
    assert [c.chunk_id for c in result.citations] == ["d24.md#0", "d23.md#0", "d22.md#0"]


@pytest.mark.real
def test_a_session_reuses_the_reranker_loaded_for_its_embedder(real_embedder):
    from models.reranker import optional_reranker

    first = optional_reranker(real_embedder)
    assert first is not None and optional_reranker(real_embedder) is first
    assert optional_reranker(None) is None  # BM25 only: nothing to read MiniLM's ids with
