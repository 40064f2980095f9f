"""Per-claim verification: each verdict on hand-made cases, and the rules that must hold for every answer."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import CountingEmbedder, HashEmbedder
from rag.citations import Citation
from rag.verification.support import Params
from rag.types import Chunk
from rag.verification.verifier import DENSE, LEXICAL, verify_answer

KV = Chunk(
    "docs/kv-cache.md#2",
    "docs/kv-cache.md",
    "docs/kv-cache.md",
    "The KV cache stores the keys and values of every token already processed. "
    "Its size grows linearly with n_ctx, which defaults to 2048 tokens. "
    "The cache is not shared between two Llama instances, so embeddings need their own instance.",
    ("KV cache", "Memory"),
)
BM25 = Chunk(
    "docs/bm25.md#1",
    "docs/bm25.md",
    "docs/bm25.md",
    "BM25 ranks chunks by term frequency and inverse document frequency. The k1 parameter is set to 1.5.",
    ("BM25",),
)
SECRET = Chunk(
    "docs/secret.md#1",
    "docs/secret.md",
    "docs/secret.md",
    "The index is rebuilt whenever a file in the docs folder changes.",
)
INDEX = {c.chunk_id: c for c in (KV, BM25, SECRET)}
EMBEDDERS = [None, HashEmbedder()]


def cite(n: int, chunk: Chunk) -> Citation:
    return Citation(n, chunk.chunk_id, chunk.doc_id, chunk.uri)


SHOWN = {1: cite(1, KV), 2: cite(2, BM25)}


def verdicts(answer, shown=SHOWN, lookup=INDEX.get, embedder=None, **kw):
    return [c.verdict for c in verify_answer(answer, shown, lookup, embedder, **kw).claims]


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_copied_sentence_is_supported_with_the_sentence_as_evidence(embedder):
    result = verify_answer("The KV cache stores the keys and values of every token already processed [1].", SHOWN,
                           INDEX.get, embedder)  # fmt: skip
    (claim,) = result.claims
    assert claim.verdict == "supported"
    assert claim.evidence == "The KV cache stores the keys and values of every token already processed."
    assert claim.support == pytest.approx(1.0)
    (check,) = result.citations
    assert (check.n, check.chunk_id, check.verdict, check.evidence) == (1, KV.chunk_id, "supported", claim.evidence)


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_claim_from_another_chunk_is_unsupported(embedder):
    result = verify_answer("BM25 ranks chunks by term frequency and inverse document frequency [1].", SHOWN,
                           INDEX.get, embedder)  # fmt: skip
    (claim,) = result.claims
    assert claim.verdict == "unsupported"
    assert claim.evidence in KV.text and claim.support is not None


def test_a_score_between_the_thresholds_is_weak():
    params = Params(w_cos=0.0, w_sentence=1.0, w_chunk=0.0, supported=0.9, weak=0.4)
    # Half of the claim's content words are in the best sentence.
    (claim,) = verify_answer("BM25 ranks pages by color [2].", SHOWN, INDEX.get, None, params=params).claims
    assert claim.verdict == "weak"
    assert claim.support == pytest.approx(0.5)


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_an_identifier_the_chunk_never_mentions_pushes_supported_down_to_weak(embedder):
    answer = "The KV cache stores the keys and values of every token already processed with `n_gpu_layers` [1]."
    (claim,) = verify_answer(answer, SHOWN, INDEX.get, embedder).claims
    assert claim.verdict == "weak"
    assert "n_gpu_layers" in claim.reason


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_changed_number_is_unsupported_and_says_what_the_text_says(embedder):
    answer = "Its size grows linearly with n_ctx, which defaults to 4096 tokens [1]."
    (claim,) = verify_answer(answer, SHOWN, INDEX.get, embedder).claims
    assert claim.verdict == "unsupported"
    assert "2048" in claim.reason and "4096" in claim.reason


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_a_number_moved_onto_another_setting_is_not_supported(embedder):
    chunk = Chunk("docs/cfg.md#1", "docs/cfg.md", "docs/cfg.md", "Set n_ctx to 2048 and n_batch to 512 for chat.")
    answer = "Set n_ctx to 512 and n_batch to 512 for chat [1]."
    assert verdicts(answer, {1: cite(1, chunk)}, {chunk.chunk_id: chunk}.get, embedder) == ["unsupported"]


@settings(max_examples=60, deadline=None)
@given(
    sentence=st.sampled_from(
        [
            "Its size grows linearly with n_ctx, which defaults to 2048 tokens.",
            "The k1 parameter is set to 1.5.",
            "The cache is not shared between two Llama instances, so embeddings need their own instance.",
        ]
    ),
    new=st.one_of(st.integers(0, 100000).map(str), st.sampled_from(["1.25", "2,048", "three", "0.5"])),
    dense=st.booleans(),
)
def test_a_changed_number_is_never_supported(sentence, new, dense):
    old = re.search(r"(?<![\w.])\d+(?:\.\d+)?|\btwo\b", sentence).group()
    if new.replace(",", "") in (old, "2" if old == "two" else old):
        return
    claim = sentence.replace(old, new, 1)
    shown = {1: cite(1, KV), 2: cite(2, BM25)}
    result = verify_answer(f"{claim} [1][2]", shown, INDEX.get, HashEmbedder() if dense else None)
    assert result.claims[0].verdict != "supported"
    assert all(c.verdict != "supported" for c in result.citations)


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize(
    "answer",
    [
        "The KV cache does not store the keys and values of every token already processed [1].",
        "The cache is shared between two Llama instances, so embeddings need their own instance [1].",
        "The cache is never shared between two Llama instances, so embeddings do not need their own instance [1].",
    ],
)
def test_an_inserted_or_removed_negation_is_unsupported(embedder, answer):
    (claim,) = verify_answer(answer, SHOWN, INDEX.get, embedder).claims
    assert claim.verdict == "unsupported"
    assert "negat" in claim.reason


def test_a_number_not_shown_is_made_up_even_when_the_index_holds_a_supporting_chunk():
    answer = "The index is rebuilt whenever a file in the docs folder changes [3]."
    shown = {**SHOWN, 9: cite(9, SECRET)}
    result = verify_answer(answer, SHOWN, INDEX.get, None)
    assert [c.verdict for c in result.claims] == ["made_up"]
    assert result.citations[0].evidence is None and result.made_up == (3,)
    assert verdicts(answer.replace("[3]", "[9]"), shown) == ["supported"]


def test_a_chunk_not_shown_is_never_looked_up_or_used():
    seen: list[str] = []

    def lookup(chunk_id):
        seen.append(chunk_id)
        return INDEX.get(chunk_id)

    answer = (
        "The index is rebuilt whenever a file in the docs folder changes [1]. "
        "The index is rebuilt whenever a file in the docs folder changes. "
        "BM25 ranks chunks by term frequency [2][7]."
    )
    result = verify_answer(answer, SHOWN, lookup, HashEmbedder())
    assert set(seen) <= {KV.chunk_id, BM25.chunk_id}
    assert [c.verdict for c in result.claims] == ["unsupported", "uncited", "supported"]
    assert all(SECRET.text not in (c.evidence or "") for c in result.claims + result.citations)


def test_a_claim_takes_the_best_verdict_of_its_citations():
    result = verify_answer("BM25 ranks chunks by term frequency and inverse document frequency [5][1][2].", SHOWN,
                           INDEX.get, None)  # fmt: skip
    # One verdict per number: shown ones in order of use, made-up ones last.
    assert [(c.n, c.verdict) for c in result.citations] == [(1, "unsupported"), (2, "supported"), (5, "made_up")]
    assert result.claims[0].verdict == "supported" and result.claims[0].citations == (5, 1, 2)


@pytest.mark.parametrize(
    "citation, why",
    [
        (Citation(1, "docs/gone.md#1", "docs/gone.md", "docs/gone.md"), "not in the index"),
        (Citation(1, KV.chunk_id, "docs/old-name.md", KV.uri), "doc id"),
        (Citation(1, KV.chunk_id, KV.doc_id, "docs/elsewhere.md"), "uri"),
    ],
)
def test_a_shown_citation_that_no_longer_resolves_is_unresolved(citation, why):
    result = verify_answer("The KV cache stores the keys and values of every token already processed [1].",
                           {1: citation}, INDEX.get, None)  # fmt: skip
    (check,) = result.citations
    assert (check.verdict, check.support, check.evidence) == ("unresolved", None, None)
    assert why in check.reason
    assert result.claims[0].verdict == "unresolved"


def test_unresolved_ranks_above_made_up_when_a_claim_has_only_those():
    shown = {1: Citation(1, "docs/gone.md#1", "docs/gone.md", "docs/gone.md")}
    assert verdicts("The KV cache stores keys for every token [4][1].", shown) == ["unresolved"]


def test_factual_sentences_without_a_marker_are_uncited_and_filler_is_skipped():
    answer = "Here is what the docs say:\n\n- The model runs on a laptop CPU.\n\nI hope this helps."
    result = verify_answer(answer, SHOWN, INDEX.get, None)
    assert [(c.text, c.verdict, c.reason) for c in result.claims] == [
        ("The model runs on a laptop CPU.", "uncited", "a factual claim with no citation")
    ]
    assert result.counts()["uncited"] == 1 and not result.has_supported_claim


def test_without_an_embedder_the_result_says_it_is_lexical_only():
    assert verify_answer("The cache grows [1].", SHOWN, INDEX.get, None).lexical_only
    dense = verify_answer("The cache grows [1].", SHOWN, INDEX.get, HashEmbedder())
    assert not dense.lexical_only


def test_all_claims_and_sentences_are_embedded_in_one_batch_and_reused():
    embedder = CountingEmbedder(model_id="counting-once")
    answer = "The KV cache stores keys [1]. BM25 ranks chunks [2]. The k1 parameter is 1.5 [2][1]. Unrelated [3]."
    first = verify_answer(answer, SHOWN, INDEX.get, embedder)
    assert embedder.calls == 1
    again = verify_answer(answer, SHOWN, INDEX.get, embedder)
    assert embedder.calls == 1 and again == first


def test_shipped_thresholds_are_ordered():
    for params in (DENSE, LEXICAL):
        assert 0.0 <= params.weak <= params.supported <= 1.0
    assert LEXICAL.w_cos == 0.0


@pytest.fixture(scope="module")
def corpus_chunks():
    """Real docs_corpus chunks, as frozen in the calibration set."""
    from benchmarks.fitting.calibration_set import load_items

    return {i.chunk.chunk_id: i.chunk for i in load_items()}


@pytest.mark.real
def test_real_embedder_judges_paraphrase_changed_number_and_other_topic(corpus_chunks, real_embedder):
    kv, bm25 = corpus_chunks["docs/kv-cache.md#1"], corpus_chunks["docs/bm25.md#2"]
    shown = {1: cite(1, kv), 2: cite(2, bm25)}
    answer = (
        "Every later token needs the keys and values [1]. "
        "Keys are stored before the rotary position embedding is applied [1]. "
        "Each layer keeps 3 key vectors for each position in the context [1]. "
        "BM25 ranks chunks by how many users clicked them [2]. "
        "Queries are only needed for the token being processed [2]. "
        "Keys and values are needed by every later token [7]."
    )
    result = verify_answer(answer, shown, {kv.chunk_id: kv, bm25.chunk_id: bm25}.get, real_embedder)
    assert not result.lexical_only
    assert [(c.verdict, c.reason.split(" ")[:4]) for c in result.claims] == [
        ("supported", [""]),  # a paraphrase
        ("unsupported", ["the", "cited", "text", "says"]),  # "after" became "before"
        ("unsupported", ["the", "cited", "text", "says"]),  # "one key vector" became "3 key vectors"
        ("unsupported", [""]),  # the chunk is about BM25 (its title names it), but it ranks by term statistics
        ("unsupported", [""]),  # true, but of chunk [1], and it cites [2]
        ("made_up", ["[7]", "was", "not", "among"]),
    ]
    assert result.claims[0].evidence == "Keys and values are needed by every later token."


TIMING = Chunk(
    "docs/t.md#0",
    "docs/t.md",
    "docs/t.md",
    "Keys are stored after the rotary embedding is applied. Each layer keeps one key vector per position.",
)


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize(
    "claim, verdict",
    [
        ("Keys are stored before the rotary embedding is applied [1].", "unsupported"),
        ("Each layer keeps 3 key vectors per position [1].", "unsupported"),
        ("Each layer keeps a key vector per position [1].", "supported"),
        ("Each layer keeps one key vector per position [1].", "supported"),
    ],
)
def test_antonyms_and_counts_written_as_words_are_checked(embedder, claim, verdict):
    assert verdicts(claim, {1: cite(1, TIMING)}, {TIMING.chunk_id: TIMING}.get, embedder) == [verdict]
