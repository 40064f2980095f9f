"""rag/tuned.py: every fitted constant in one place, each under a record naming the fit packages it saw."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.realdocs import refit
from benchmarks.realdocs.suite import PACKAGES_FILE
from rag import tuned
from rag.answering import answerability, extractive, passages
from benchmarks.fitting import calibrate, tuning
from benchmarks.fitting.handlabelled import HANDLABELLED_FILE, RESERVED_PACKAGES, UNSEEN_FILE
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


# -- the writer the refit commands use ------------------------------------------------------------------------

def copy_of_tuned(tmp_path: Path) -> Path:
    path = tmp_path / "tuned.py"
    shutil.copyfile(tuning.TUNED_FILE, path)
    return path


def test_the_writer_writes_rag_tuned_exactly_as_it_is(tmp_path):
    path = copy_of_tuned(tmp_path)
    assert tuning.rewrite(tuning.read(path), path) == ""
    assert path.read_text(encoding="utf-8") == tuning.TUNED_FILE.read_text(encoding="utf-8")


def test_a_refit_round_trips_through_the_file_and_prints_its_diff(tmp_path):
    path = copy_of_tuned(tmp_path)
    before = tuning.read(path)
    new = refit.Constants({"coverage": 0.3, "cosine": 0.4, "rank": 0.2, "number": 0.1}, (0.5, np.float64(1.25), -0.5, -1.0, 0.75), -0.125)
    diff = refit.write_constants(new, ["bash-doc", "docs_corpus"], path)
    after = tuning.read(path)
    assert after["QUOTE_WEIGHTS"] == new.weights and after["ANSWERABILITY_BIAS"] == -0.125
    assert after["ANSWERABILITY_WEIGHTS"] == dict(zip(answerability.SIGNALS, (0.5, 1.25, -0.5, -1.0, 0.75)))
    assert after["QUOTE_FIT"].packages == ("bash-doc", "docs_corpus") and after["QUOTE_FIT"].command.endswith("refit")
    assert {k: v for k, v in after.items() if k not in before["QUOTE_FIT"].constants + ("QUOTE_FIT",)} == {
        k: v for k, v in before.items() if k not in before["QUOTE_FIT"].constants + ("QUOTE_FIT",)}
    assert f"-ANSWERABILITY_BIAS = {tuned.ANSWERABILITY_BIAS}\n" in diff and "+ANSWERABILITY_BIAS = -0.125\n" in diff
    assert "+    packages=(\"bash-doc\", \"docs_corpus\"),\n" in diff
    assert refit.write_constants(new, ["bash-doc", "docs_corpus"], path) == ""  # written once, nothing left to change
    assert max(len(line) for line in path.read_text(encoding="utf-8").splitlines()) <= tuning.WIDTH


def test_calibrate_fit_writes_the_verifier_constants_and_a_dry_run_only_prints(tmp_path, capsys):
    path = copy_of_tuned(tmp_path)
    fitted = {"DENSE": Params(0.9, 0.1, 0.0, 0.7, 0.65), "LEXICAL": verifier.LEXICAL}
    packages = tuple(f"package-{i:02d}-with-a-long-name" for i in range(12))  # wraps
    calibrate.write_fit(fitted, packages, path, write=False)
    assert "+VERIFIER_DENSE = {\"w_cos\": 0.9" in capsys.readouterr().out
    assert path.read_text(encoding="utf-8") == tuning.TUNED_FILE.read_text(encoding="utf-8")
    calibrate.write_fit(fitted, packages, path)
    printed = capsys.readouterr().out
    after = tuning.read(path)
    assert Params(**after["VERIFIER_DENSE"]) == fitted["DENSE"] and Params(**after["VERIFIER_LEXICAL"]) == verifier.LEXICAL
    assert after["VERIFIER_FIT"].packages == packages and "-VERIFIER_DENSE" in printed and "-VERIFIER_LEXICAL" not in printed
    assert max(len(line) for line in path.read_text(encoding="utf-8").splitlines()) <= tuning.WIDTH


def test_a_fit_on_a_reserved_package_or_of_an_unknown_constant_is_refused(tmp_path):
    path = copy_of_tuned(tmp_path)
    with pytest.raises(ValueError, match="git-doc reserved"):
        tuning.record("QUOTE_FIT", "refit", ["bash-doc", "git-doc"], {"ANSWERABILITY_BIAS": 0.5})
    with pytest.raises(KeyError, match="NO_SUCH_CONSTANT"):
        tuning.rewrite({"NO_SUCH_CONSTANT": 1.0}, path)
    assert path.read_text(encoding="utf-8") == tuning.TUNED_FILE.read_text(encoding="utf-8")


def _case(package: str, i: int, answerable: bool, unshown: float, score: float):
    from benchmarks.fitting.quote_eval import Case
    from rag.answering.extractive import RankedSentences
    from rag.answering.quote_features import Candidate
    from rag.evaluation import Question

    question = Question(f"{package}{i}", "Does it?", "a.md" if answerable else None, None, "paraphrase")
    features = np.array([[score, score, 1.0, 0.0]], dtype=np.float32)
    ranked = RankedSentences([Candidate(1, 1, "It does.")], features, extractive.scores_of(features, True), None, ("It does.",))
    return Case(question, 0, ranked, np.array([False]), np.zeros(1), [score],
                {"unknown_name": 0.0, "unknown_share": 0.0, "unshown_name": unshown})


def test_refitting_the_declines_alone_keeps_how_often_answerable_questions_are_declined():
    # Two packages; an unshown name marks most unanswerable questions (and a few answerable ones), scores overlap.
    rng = np.random.default_rng(3)
    fit = {}
    for package in ("one", "two"):
        cases = [_case(package, i, True, float(i % 10 == 0), float(rng.uniform(0.2, 0.8))) for i in range(60)]
        cases += [_case(package, 60 + i, False, float(i % 4 != 0), float(rng.uniform(0.1, 0.6))) for i in range(20)]
        fit[package] = cases
    current = refit.Constants(dict(extractive.WEIGHTS), (0.78, 1.36, -0.82, -1.07, 0.0), 0.58)
    after = refit.refit_declines(fit, current)
    assert after.weights == current.weights and after.ab_weights[4] > 0  # the unshown name now counts for a decline
    assert after.lexical_weights[answerability.SIGNALS.index("best_cosine")] == 0.0  # no cosine without an embedder
    rows = [(refit.answerability_signals(c, current.weights), c.question.answerable) for cases in fit.values() for c in cases]

    def declined(constants, answerable):
        return sum(answerability.decide(r, constants.ab_weights, constants.ab_bias) >= 0.5 for r, a in rows if a == answerable)

    assert declined(after, True) == declined(current, True)
    assert declined(after, False) > declined(current, False)
