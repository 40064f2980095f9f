"""Every fitted or measured-and-chosen constant of the runtime, each group under the record of what chose it.

A record (`Fit`) names the command, the day and the packages the choice saw: fit packages only (git-doc,
nodejs-doc and sqlite3-doc are reserved for independent checks and never fitted on). The modules that use a
constant read it from here, so a refit changes this file alone: `python -m benchmarks.realdocs refit` and `python -m
benchmarks.fitting.calibrate fit` rewrite their group in place (benchmarks/fitting/tuning.py) and print the diff.
Keep each assignment on lines of its own, its comment above it.
"""

from __future__ import annotations

from typing import NamedTuple


class Fit(NamedTuple):
    """What chose a group of constants: the command, the day (UTC), the packages it saw, the constants it set."""

    command: str
    date: str
    packages: tuple[str, ...]
    constants: tuple[str, ...]


# The quote scorer's weights over rag.answering.quote_features.FEATURES (extractive rescales them to sum to 1, so a
# score stays in [0, 1]), and the answerability rule: logistic weights over rag.answering.answerability.SIGNALS and
# a bias; answerable when P(unanswerable) < 0.5. Each fit package weighs the same (benchmarks/realdocs/refit.py).
# `refit --declines` refits the rule alone and keeps QUOTE_WEIGHTS, fitted 2026-12-02 on postgresql-doc-15,
# docutils-doc, bash-doc and docs_corpus. The lexical rule decides where no embedder gives cosines; fitted on the same
# questions' hybrid excerpts with the cosine left out of the score, its bias set the same way. The standout rule
# (over rag.answering.answerability.STANDOUT_SIGNALS) decides where the index says how far its closest chunk stands
# out; fitted on the same questions, its bias set the same way.
QUOTE_FIT = Fit(
    command="python -m benchmarks.realdocs refit --declines",
    date="2026-12-05",
    packages=(
        "postgresql-doc-15", "docutils-doc", "bash-doc", "docs_corpus", "apache2-doc", "python-django-doc",
        "python-flask-doc", "developers-reference", "postfix-doc", "rsyslog-doc", "debian-policy", "zsh-doc",
        "python-pytest-doc", "sphinx-doc", "bind9-doc", "exim4-doc-html", "vim-doc", "haproxy-doc", "python-click-doc",
        "python-jinja2-doc", "tool-manuals",
    ),
    constants=(
        "QUOTE_WEIGHTS", "ANSWERABILITY_WEIGHTS", "ANSWERABILITY_BIAS", "ANSWERABILITY_LEXICAL_WEIGHTS",
        "ANSWERABILITY_LEXICAL_BIAS", "ANSWERABILITY_STANDOUT_WEIGHTS", "ANSWERABILITY_STANDOUT_BIAS",
    ),
)
QUOTE_WEIGHTS = {"coverage": 0.35, "cosine": 0.38, "rank": 0.19, "number": 0.07}
ANSWERABILITY_WEIGHTS = {
    "unknown_name": 0.62,
    "unknown_share": 4.87,
    "best_score": -2.21,
    "best_cosine": -5.21,
    "unshown_name": 2.0,
}
ANSWERABILITY_BIAS = 2.19
ANSWERABILITY_LEXICAL_WEIGHTS = {
    "unknown_name": 0.7,
    "unknown_share": 5.26,
    "best_score": -3.98,
    "best_cosine": 0.0,
    "unshown_name": 1.98,
}
ANSWERABILITY_LEXICAL_BIAS = -0.01
ANSWERABILITY_STANDOUT_WEIGHTS = {
    "unknown_name": 0.7,
    "unknown_share": 4.88,
    "best_score": -1.2,
    "best_cosine": -4.72,
    "unshown_name": 1.87,
    "standout": -9.72,
}
ANSWERABILITY_STANDOUT_BIAS = 2.14

# The quote encoder's weight in the score that orders quotes (rag.answering.extractive.QUOTE_TOWER_WEIGHT), with
# the quote encoder trained beside it to add what QUOTE_WEIGHTS' score lacks; chosen on the tenth of the fit
# questions kept out of that training (benchmarks/realdocs/RESULTS.md).
QUOTE_TOWER_FIT = Fit(
    command="python -m benchmarks.realdocs train-quote-tower",
    date="2026-12-04",
    packages=(
        "postgresql-doc-15", "docutils-doc", "bash-doc", "docs_corpus", "apache2-doc", "python-django-doc",
        "python-flask-doc", "developers-reference", "postfix-doc", "rsyslog-doc", "debian-policy", "zsh-doc",
    ),
    constants=("QUOTE_TOWER_WEIGHT",),
)
QUOTE_TOWER_WEIGHT = 0.6

# The verifier's support score weights and verdict thresholds (rag.verification.support.Params), with MiniLM
# (DENSE) and by word overlap alone (LEXICAL): fitted on the train split of both hand-written claim sets
# (tests/data/claims_handlabelled.jsonl, tests/data/claims_unseen.jsonl), passages of the reserved packages left
# out; `python -m benchmarks.fitting.calibrate report` prints how they do on the held-back packages.
VERIFIER_FIT = Fit(
    command="python -m benchmarks.fitting.calibrate fit",
    date="2026-12-02",
    packages=(
        "bash", "cmake-doc", "coreutils", "git", "gpg-agent", "grep", "man-db", "openssh-client", "passwd",
        "python-jinja2-doc", "python-requests-doc", "python3", "systemd", "vim-doc", "zsh-doc",
    ),
    constants=("VERIFIER_DENSE", "VERIFIER_LEXICAL"),
)
VERIFIER_DENSE = {"w_cos": 1.0, "w_sentence": 0.0, "w_chunk": 0.0, "supported": 0.75, "weak": 0.736}
VERIFIER_LEXICAL = {"w_cos": 0.0, "w_sentence": 0.5, "w_chunk": 0.5, "supported": 0.806, "weak": 0.722}

# Weighted fusion (min-max normalised scores; BM25_WEIGHT is the BM25 share, the rest dense) kept against rrf,
# other weights and per-query z-scores: the best mean doc-level R@5 over the fit packages
# (benchmarks/realdocs/RESULTS.md, "Fusion, fitted on the fit packages only").
FUSION_FIT = Fit(
    command="python -m benchmarks.realdocs.fusion_sweep",
    date="2026-12-02",
    packages=("postgresql-doc-15", "docutils-doc", "bash-doc", "docs_corpus"),
    constants=("DEFAULT_FUSION", "BM25_WEIGHT"),
)
DEFAULT_FUSION = "weighted"
BM25_WEIGHT = 0.5

# Chunk size in tokens: kept against 128 and 320 (k scaled to the same evidence budget) on the fit packages, then
# against 128 on the held-back ones (benchmarks/realdocs/RESULTS.md).
CHUNK_FIT = Fit(
    command="python -m benchmarks.realdocs score",
    date="2026-12-02",
    packages=("postgresql-doc-15", "docutils-doc", "bash-doc", "docs_corpus"),
    constants=("CHUNK_TOKENS",),
)
CHUNK_TOKENS = 200

# Dense hits below this cosine are noise: off-topic questions reach 0.09-0.28 against docs_corpus, while 95% of
# gold chunks score above 0.28 (MiniLM, docs_corpus alone).
DENSE_FLOOR_FIT = Fit(
    command="python -m benchmarks.fitting.retrieval_eval --sweep",
    date="2026-11-29",
    packages=("docs_corpus",),
    constants=("MIN_DENSE_SCORE",),
)
MIN_DENSE_SCORE = 0.25

# Below MIN_QUOTE_SCORE a sentence is not worth quoting (it bounds the coverage and cosine part of the score);
# checked on the real-docs fit packages with the refitted weights: 0.1-0.15 within 0.01, 0.25 and up lose
# evidence. After the best few quotes, OTHER_EXCERPT more: the best sentence of an excerpt none of them came from
# (docs_corpus: evidence in the quoted text 60 -> 61 of 76 held back; on the fit packages 0 / 1 / 2 give
# 0.54 / 0.58 / 0.60, a second one not kept; docs/decisions.md).
QUOTE_CHOICE_FIT = Fit(
    command="python -m benchmarks.fitting.quote_eval",
    date="2026-12-02",
    packages=("docs_corpus",),
    constants=("MIN_QUOTE_SCORE", "OTHER_EXCERPT"),
)
MIN_QUOTE_SCORE = 0.2
OTHER_EXCERPT = 1

# With the cross-encoder: who declines ("rule": rag.answering.answerability, the reranker only orders; "reranker":
# its answer_logit), and the weight of the hybrid's order in the passage blend (BM25 pools: 0.64 -> 0.69 in the
# first 5), both chosen on the tenth of the fit questions kept out of the reranker's training
# (benchmarks/realdocs/RESULTS.md).
RERANKER_FIT = Fit(
    command="python -m benchmarks.realdocs train-reranker",
    date="2026-12-03",
    packages=(
        "postgresql-doc-15", "docutils-doc", "bash-doc", "docs_corpus", "apache2-doc", "python-django-doc",
        "python-flask-doc", "developers-reference", "postfix-doc", "rsyslog-doc", "debian-policy", "zsh-doc",
    ),
    constants=("DECLINE_BY", "HYBRID_WEIGHT"),
)
DECLINE_BY = "rule"
HYBRID_WEIGHT = 1.0

# The learned order of search hits (rag.indexing.ordering): weights over its FEATURES and a bias, a pairwise
# logistic fit on the fit packages' questions, each chunk holding the evidence against each one that does not
# (benchmarks/realdocs/fit_order.py; benchmarks/realdocs/RESULTS.md has every package before and after). ORDER is
# "learned": evidence in the first five hits 0.784 -> 0.808 over the fit packages, each left out of its own fit.
ORDER_FIT = Fit(
    command="python -m benchmarks.realdocs fit-order",
    date="2026-12-03",
    packages=(
        "postgresql-doc-15", "docutils-doc", "bash-doc", "docs_corpus", "apache2-doc", "python-django-doc",
        "python-flask-doc", "developers-reference", "postfix-doc", "rsyslog-doc", "debian-policy", "zsh-doc",
    ),
    constants=("ORDER", "ORDER_WEIGHTS", "ORDER_BIAS"),
)
ORDER = "learned"
ORDER_WEIGHTS = {
    "rank": -0.035,
    "fused": 1.3822,
    "bm25_rank": 0.0757,
    "dense_rank": 0.049,
    "bm25": 1.6821,
    "cosine": 6.9765,
    "cosine_gap": 8.1485,
    "doc_hits": -0.4695,
    "doc_best": 0.2049,
    "doc_share": 1.0542,
    "heading_weight": 1.8822,
    "coverage": 2.8708,
    "heading_share": -2.2573,
    "ordinal": -0.4077,
    "first": -0.632,
    "length": 1.3633,
    "doc_lead": -0.2275,
}
ORDER_BIAS = -2.4708
