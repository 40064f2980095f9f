"""rag/tuned.py: every fitted constant in one place, each under a record naming the fit packages it saw."""

from __future__ import annotations

import json

from benchmarks.realdocs.suite import PACKAGES_FILE
from rag import tuned
from rag.answering import answerability, extractive, passages
from rag.evaluation.handlabelled import HANDLABELLED_FILE, RESERVED_PACKAGES, UNSEEN_FILE
from rag.indexing import hybrid
from rag.ingest import chunking
from rag.retrieval import fusion
from rag.verification import verifier
from rag.verification.support import Params


def constants() -> dict[str, object]:
    return {name: value for name, value in vars(tuned).items() if name.isupper() and not isinstance(value, tuned.Fit)}


def fits() -> dict[str, tuned.Fit]:
    return {name: value for name, value in vars(tuned).items() if isinstance(value, tuned.Fit)}


def test_the_modules_use_the_tuned_values():
    assert extractive.WEIGHTS == tuned.QUOTE_WEIGHTS and tuple(extractive.WEIGHTS) == extractive.FEATURES
    assert answerability.WEIGHTS == tuple(tuned.ANSWERABILITY_WEIGHTS[name] for name in answerability.SIGNALS)
    assert tuple(tuned.ANSWERABILITY_WEIGHTS) == answerability.SIGNALS
    assert answerability.BIAS == tuned.ANSWERABILITY_BIAS
    assert verifier.DENSE == Params(**tuned.VERIFIER_DENSE) and verifier.LEXICAL == Params(**tuned.VERIFIER_LEXICAL)
    assert (fusion.BM25_WEIGHT, hybrid.DEFAULT_FUSION, hybrid.MIN_DENSE_SCORE) == (
        tuned.BM25_WEIGHT, tuned.DEFAULT_FUSION, tuned.MIN_DENSE_SCORE)
    assert chunking.DEFAULT_MAX_TOKENS == tuned.CHUNK_TOKENS
    assert (extractive.MIN_SCORE, extractive.OTHER_EXCERPT, extractive.DECLINE_BY) == (
        tuned.MIN_QUOTE_SCORE, tuned.OTHER_EXCERPT, tuned.DECLINE_BY)
    assert passages.HYBRID_WEIGHT == tuned.HYBRID_WEIGHT


def test_every_tuned_constant_is_set_by_exactly_one_fit_record():
    named = [name for fit in fits().values() for name in fit.constants]
    assert sorted(named) == sorted(constants())


def test_no_fit_record_names_a_reserved_or_held_back_package():
    splits = {row["name"]: row["split"] for row in json.loads(PACKAGES_FILE.read_text(encoding="utf-8"))["packages"]}
    trained = set()
    for path in (HANDLABELLED_FILE, UNSEEN_FILE):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        trained |= {r["package"] for r in rows if r["type"] == "passage" and r["split"] == "train"}
    for name, fit in fits().items():
        assert fit.packages and not set(fit.packages) & RESERVED_PACKAGES, name
        known = splits if name != "VERIFIER_FIT" else dict.fromkeys(trained, "fit")
        assert {p: known.get(p) for p in fit.packages} == dict.fromkeys(fit.packages, "fit"), name
