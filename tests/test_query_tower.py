"""The tuned question encoder (issue #37): the shipped layers load, match PyTorch, move questions towards their
evidence, leave documents' vectors alone, can be switched off, and share one weights file with the reranker."""

from __future__ import annotations

import numpy as np
import pytest

from models.errors import ModelNotFound
from fakes import HashEmbedder
from models.query_tower import (
    PREFIX, QUOTE_PREFIX, QueryTower, TunedQueries, attach_tuned_queries, has_query_tower, load_query_tower,
    minilm_weights,
)
from models.reranker import RERANKER_FILE, load_reranker, read_reranker
from rag.indexing.dense import query_vector

QUESTIONS = [
    "How do I make ls sort by modification time?", "What does the KV cache store?", "Can I resume a stopped download?",
    "which port does the server listen on", "how to disable the cache", "What is BM25?", "",
    "a " * 200, "Wie geht das? naïve café 日本語", "tabs\tand\nnewlines \x1b[31m", "How are fields separated?",
    "one", "What does --force do?", "my backup script dies halfway, how do I see why?",
    "keep the container running after the shell exits", "stop git from keeping .orig files",
    "limit how much memory a service may use", "where are the logs", "turn off the beep", "speed up the build",
]


@pytest.fixture(scope="module")
def tower(real_embedder):
    return load_query_tower(real_embedder.tokenize)


@pytest.mark.real
def test_the_shipped_file_holds_the_question_layers_beside_the_reranker(tower):
    weights, meta = read_reranker()
    assert has_query_tower() and RERANKER_FILE.stat().st_size <= 30_000_000
    assert tower.trained_from == int(meta[PREFIX + "trained_from"]) and len(tower.layers) == 6
    trained_on = meta[PREFIX + "trained_on"].split(",")
    assert "python3-doc" not in trained_on and "git-doc" not in trained_on and len(trained_on) >= 10  # fit only
    assert not any(k.startswith(PREFIX + "encoder.layer.0.") for k in weights)  # lower layers are MiniLM's own
    assert any(k.startswith("encoder.layer.") for k in weights)  # the cross-encoder's tensors are still there


@pytest.mark.real
def test_untuned_layers_give_the_embedders_own_vectors(real_embedder):
    """The numpy pass with MiniLM's own top layers in the tuned slots equals llama.cpp's embedding."""
    from models.llama_cpp.bert_gguf import minilm_zip

    minilm = minilm_weights(minilm_zip())
    own = {PREFIX + k: v for k, v in minilm.items() if k.startswith(("encoder.layer.4.", "encoder.layer.5."))}
    plain = QueryTower(minilm, own, real_embedder.tokenize)
    got, expected = plain.encode(QUESTIONS), real_embedder.embed(QUESTIONS)
    assert got.shape == expected.shape and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert float((got * expected).sum(1).min()) > 0.999


@pytest.mark.real
@pytest.mark.parametrize("prefix", [PREFIX, QUOTE_PREFIX])
def test_numpy_vectors_match_pytorch_on_20_questions(prefix, real_embedder):
    torch = pytest.importorskip("torch", reason="the training extra: pip install -e '.[train]'")
    tower = load_query_tower(real_embedder.tokenize, prefix=prefix)
    from benchmarks.realdocs.train_query_tower import TRAINED_FROM, tower_model
    from benchmarks.realdocs.train_reranker import layer_tensors
    from models.llama_cpp.bert_gguf import minilm_zip

    weights, _ = read_reranker()
    model = tower_model(minilm_zip())
    with torch.no_grad():  # the shipped float16 layers, widened, copied into the PyTorch encoder (slices are views)
        for i in range(TRAINED_FROM, 6):
            for name, param in layer_tensors(model.layers[i], f"{prefix}encoder.layer.{i}.").items():
                param.copy_(torch.tensor(weights[name]))
        expected = np.concatenate([model.encode([tower.ids(q)]).numpy() for q in QUESTIONS])
    got = tower.encode(QUESTIONS)
    assert float((got * expected).sum(1).min()) > 0.9999
    # tuned: the question moved, but stays in MiniLM's space
    cos = (got * real_embedder.embed(QUESTIONS)).sum(1)
    assert float(cos.max()) < 0.9999 and float(cos.mean()) > 0.8


@pytest.mark.real
def test_the_tuned_question_ranks_its_answer_higher(real_embedder):
    """A question in a user's words against the passage that answers it and its neighbours on the same page."""
    passages = [
        "Restart policies: use --restart unless-stopped to keep a container running after the daemon restarts.",
        "docker run starts a new container from an image; the container stops when its main process exits.",
        "Attach to a running container with docker attach to see its output.",
    ]
    vectors = real_embedder.embed(passages)
    question = "my container keeps dying whenever I reboot the machine, how do I make it come back by itself?"
    attach_tuned_queries(real_embedder, False)
    base = vectors @ query_vector(real_embedder, question)
    attach_tuned_queries(real_embedder)
    try:
        tuned = vectors @ query_vector(real_embedder, question)
    finally:
        attach_tuned_queries(real_embedder, False)
    assert not np.allclose(base, tuned)  # the switch changes which vector is used
    assert int(np.argmax(tuned)) == 0 and tuned[0] - tuned[1:].max() > base[0] - base[1:].max()


@pytest.mark.real
def test_switched_off_the_question_vector_is_the_embedders_own(real_embedder):
    attach_tuned_queries(real_embedder)
    attach_tuned_queries(real_embedder, False)
    assert real_embedder.query_encoder is None
    assert np.allclose(query_vector(real_embedder, QUESTIONS[0]), real_embedder.embed([QUESTIONS[0]])[0])
    attach_tuned_queries(None)  # no embedder (MiniLM not installed): nothing to attach to
    fake = HashEmbedder()
    attach_tuned_queries(fake)  # another embedder keeps its own vectors
    assert np.allclose(query_vector(fake, "kv cache"), fake.embed(["kv cache"])[0])


def test_a_file_without_question_layers_is_refused(tmp_path, real_embedder):
    from benchmarks.realdocs.train_reranker import merge_weights

    bare = tmp_path / "r.safetensors"
    merge_weights(bare, {k: v for k, v in read_reranker()[0].items() if not k.startswith(PREFIX)}, {},
                  keep=lambda name: False)
    assert not has_query_tower(bare) and not has_query_tower(tmp_path / "missing.safetensors")
    with pytest.raises(ModelNotFound, match="train-query-tower"):
        load_query_tower(real_embedder.tokenize, bare)
    assert np.isfinite(load_reranker(real_embedder.tokenize, bare).score("kettle", ["The kettle boils."])).all()


@pytest.mark.real
def test_the_queries_setting_reaches_the_embedder(tmp_path, monkeypatch, real_embedder):
    """--queries base (flag, SMOLDOCS_QUERIES or the file) switches the in-process embedder to MiniLM's own vector."""
    from agent.cli import parse
    from agent.opening import load_embedder

    monkeypatch.setenv("SMOLDOCS_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("SMOLDOCS_QUERIES", raising=False)
    assert parse(["search", "x"]).settings.queries == "tuned"
    base = parse(["search", "x", "--queries", "base"]).settings
    assert base.queries == "base" and base.origin.sources["queries"] == "flag --queries"
    try:
        assert load_embedder(base) is real_embedder and real_embedder.query_encoder is None
        monkeypatch.setenv("SMOLDOCS_QUERIES", "tuned")
        assert isinstance(load_embedder(parse(["search", "x"]).settings).query_encoder, TunedQueries)
        again = real_embedder.query_encoder
        assert load_embedder(parse(["search", "x"]).settings).query_encoder is again  # loaded once a process
    finally:
        attach_tuned_queries(real_embedder, False)


@pytest.mark.real
def test_the_shipped_file_holds_the_quote_layers_too(tower, real_embedder):
    """The quote encoder: its own tuned top layers, trained on fit packages only, a vector of its own."""
    weights, meta = read_reranker()
    assert has_query_tower(prefix=QUOTE_PREFIX)
    quotes = load_query_tower(real_embedder.tokenize, prefix=QUOTE_PREFIX)
    assert quotes.trained_from == int(meta[QUOTE_PREFIX + "trained_from"]) and len(quotes.layers) == 6
    trained_on = meta[QUOTE_PREFIX + "trained_on"].split(",")
    assert "python3-doc" not in trained_on and "git-doc" not in trained_on and len(trained_on) >= 10
    assert float(meta[QUOTE_PREFIX + "weight"]) > 0
    got, search = quotes.encode(QUESTIONS[:5]), tower.encode(QUESTIONS[:5])
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5) and float((got * search).sum(1).max()) < 0.9999


@pytest.mark.real
def test_the_quote_encoder_comes_and_goes_with_the_search_one(real_embedder):
    attach_tuned_queries(real_embedder)
    try:
        assert isinstance(real_embedder.quote_encoder, TunedQueries)
        vector = real_embedder.embed_quote_query(QUESTIONS[0])
        assert vector is not None and vector.shape == (384,)
        assert not np.allclose(vector, real_embedder.embed_query(QUESTIONS[0]))
    finally:
        attach_tuned_queries(real_embedder, False)
    assert real_embedder.quote_encoder is None and real_embedder.embed_quote_query(QUESTIONS[0]) is None


def test_a_file_without_quote_layers_leaves_quotes_to_the_scorer(tmp_path, real_embedder):
    from benchmarks.realdocs.train_reranker import merge_weights

    bare = tmp_path / "r.safetensors"
    merge_weights(bare, {k: v for k, v in read_reranker()[0].items() if not k.startswith(QUOTE_PREFIX)}, {},
                  keep=lambda name: False)
    assert not has_query_tower(bare, QUOTE_PREFIX) and has_query_tower(bare)
    with pytest.raises(ModelNotFound, match="train-quote-tower"):
        load_query_tower(real_embedder.tokenize, bare, prefix=QUOTE_PREFIX)
    assert TunedQueries(real_embedder, bare, QUOTE_PREFIX, or_base=False)("kettle") is None
    assert TunedQueries(real_embedder, bare)("kettle").shape == (384,)  # the search encoder is still there
