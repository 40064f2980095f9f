"""`python -m benchmarks.realdocs [build|check|cold|score]`: the real-docs suite's command line (default: score)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from benchmarks.realdocs.suite import QUESTIONS_DIR, SPLITS, choose_packages, load_packages
from rag.indexing.ordering import ORDER, ORDERS

USAGE = """\
  build   install missing Debian packages (as root) and copy each package's files into the cache
  check   every answerable question's evidence is in the text smoldocs extracts from its gold doc
  cold    time a first search on each package's folder as if never indexed (chunked, nothing embedded yet)
  score   index each package and print Recall@5 per retriever, quoted evidence, declines and timing (default)
  refit   fit the quote scorer and the answerability rule on the fit packages; print every package before/after;
          write the constants to rag/tuned.py and print the diff (--dry-run: only the diff; --declines: the
          answerability rule alone, declining the fit packages' answerable questions as often as before)
  train-reranker  train the cross-encoder on the fit packages (PyTorch, the training extra) and write its file
  train-query-tower  tune the question side of dense search on the fit packages (PyTorch) into the same file
  train-quote-tower  tune the quote scorer's question encoder on the fit packages (PyTorch) into the same file
  fit-order  fit the learned order of search hits on the fit packages; print every package before/after; write
          the weights to rag/tuned.py and print the diff (--dry-run: only the diff)
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.realdocs", description="The real-docs development suite.", epilog=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = ("build", "check", "cold", "score", "refit", "train-reranker", "train-query-tower", "train-quote-tower",
                "fit-order")
    parser.add_argument("command", nargs="?", default="score", choices=commands)
    parser.add_argument("--packages", nargs="+", default=None, help="only these packages (default: all)")
    parser.add_argument("--split", default="all", choices=SPLITS, help="fit, held or all packages (default: all)")
    parser.add_argument("--limit", type=int, default=None, help="score: at most this many questions per package")
    parser.add_argument("--json", action="store_true", help="score: print the rows as JSON")
    parser.add_argument("--write", type=Path, default=None, help="score: also write the tables to this Markdown file")
    parser.add_argument("--questions-dir", type=Path, action="append", default=[],
                        help="also take <package>.jsonl question files from this folder (repeatable)")
    parser.add_argument("--cases-cache", type=Path, default=None,
                        help="refit, train-quote-tower: keep each package's scored sentences in this folder and reuse them")
    parser.add_argument("--dry-run", action="store_true", help="refit, fit-order: print the diff, leave rag/tuned.py as it is")
    parser.add_argument("--declines", action="store_true",
                        help="refit: the answerability rule alone, declining the fit packages' answerable questions as "
                             "often as now")
    parser.add_argument("--rerank", choices=("on", "off", "quotes", "passages"), default="off",
                        help="score: the cross-encoder (models/reranker.safetensors) on quotes and declines, on "
                             "passages before packing, or on both (on)")
    parser.add_argument("--reranker", type=Path, default=None,
                        help="score: the cross-encoder file to use (default: the shipped models/reranker.safetensors)")
    parser.add_argument("--queries", choices=("tuned", "base"), default="tuned",
                        help="score: the question's vector from the tuned question encoder (models.query_tower) or MiniLM's own")
    parser.add_argument("--quotes", choices=("tuned", "base"), default="tuned",
                        help="score: quotes ordered with the quote encoder (models.query_tower) or by the quote scorer alone")
    parser.add_argument("--order", choices=ORDERS, default=ORDER,
                        help="score: hybrid search's order of hits, learned (rag.indexing.ordering) or fused (before it)")
    parser.add_argument("--k", type=int, default=None,
                        help="score: excerpts the first search shows (default: the agent's, 5)")
    parser.add_argument("--budget", type=int, default=None,
                        help="score: the tokens those excerpts may take (default: the agent's, 1024)")
    parser.add_argument("--typos", action="store_true",
                        help="score: ask each question with one typo (benchmarks.realdocs.typos)")
    parser.add_argument("--out", type=Path, default=None,
                        help="train-reranker, train-query-tower, train-quote-tower: write the model here (default: the shipped file)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="train-reranker, train-query-tower, train-quote-tower: passes over the data")
    parser.add_argument("--layers", type=int, default=None, help="train-reranker: MiniLM layers kept")
    parser.add_argument("--max-tokens", type=int, default=None, help="train-reranker: the window of a pair, in tokens")
    parser.add_argument("--negatives", type=int, default=None, help="train-reranker: negatives per question")
    parser.add_argument("--per-package", type=int, default=None, help="train-reranker: questions a package gives at most")
    parser.add_argument("--kind", choices=("sentences", "passages"), default=None,
                        help="train-reranker: train on sentences (quotes) or whole chunks (passages)")
    parser.add_argument("--pools", choices=("bm25", "hybrid"), default=None,
                        help="train-reranker: candidates from BM25's first hits (default) or the hybrid search's")
    args = parser.parse_args(argv)
    try:
        packages = choose_packages(load_packages(questions_dirs=[QUESTIONS_DIR, *args.questions_dir]), args.packages, args.split)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "build":
        from benchmarks.realdocs.gather import build_suite

        return build_suite(packages)
    from models.llama_cpp.tokenizer import load_tokenizer  # real parts only once a command needs them

    if args.command == "check":
        from benchmarks.realdocs.checking import check_suite

        return check_suite(packages, load_tokenizer())
    if args.command == "cold":
        from benchmarks.realdocs.scoring import cold_start
        from models.llama_cpp.embedder import load_embedder

        tokenizer, embedder = load_tokenizer(), load_embedder()
        for package in packages:
            print(f"{package.name}: {cold_start(package.folder(), tokenizer, embedder)}")
        return 0
    if args.command == "refit":
        from benchmarks.realdocs.refit import main as refit_main
        from models.llama_cpp.embedder import load_embedder

        return refit_main(packages, load_tokenizer(), load_embedder(), args.cases_cache, write=not args.dry_run,
                          declines=args.declines)
    if args.command == "train-reranker":
        return _train(packages, args)
    if args.command == "fit-order":
        from benchmarks.realdocs.fit_order import main as order_main
        from models.llama_cpp.embedder import load_embedder
        from models.query_tower import attach_tuned_queries

        embedder = load_embedder()
        attach_tuned_queries(embedder, args.queries == "tuned")
        return order_main(packages, load_tokenizer(), embedder, write=not args.dry_run, limit=args.limit)
    if args.command == "train-query-tower":
        from benchmarks.realdocs.train_query_tower import EPOCHS, main as tower_main
        from models.reranker import RERANKER_FILE

        fit = [p for p in packages if p.split == "fit"]
        return tower_main(fit, load_tokenizer(), args.out or RERANKER_FILE, args.epochs or EPOCHS, args.limit)
    if args.command == "train-quote-tower":
        from benchmarks.realdocs.train_quote_tower import EPOCHS as QUOTE_EPOCHS, main as quote_main
        from models.reranker import RERANKER_FILE

        fit = [p for p in packages if p.split == "fit"]
        return quote_main(fit, load_tokenizer(), args.out or RERANKER_FILE, args.epochs or QUOTE_EPOCHS,
                          args.cases_cache, args.limit)
    from benchmarks.realdocs.scoring import score_suite

    return score_suite(packages, load_tokenizer(), limit=args.limit, as_json=args.json, write=args.write,
                       rerank=args.rerank, reranker_file=args.reranker, tuned_queries=args.queries == "tuned",
                       order=args.order, tuned_quotes=args.quotes == "tuned", typos=args.typos, **_excerpts(args))


def _train(packages, args) -> int:
    import dataclasses

    from benchmarks.realdocs.suite import suite_dir
    from benchmarks.realdocs.train_reranker import TrainSettings, main as train_main
    from models.reranker import RERANKER_FILE
    from models.llama_cpp.tokenizer import load_tokenizer

    fit = [p for p in packages if p.split == "fit"]
    given = (("epochs", args.epochs), ("layers", args.layers), ("limit", args.limit), ("max_tokens", args.max_tokens),
             ("negatives", args.negatives), ("per_package", args.per_package), ("kind", args.kind), ("pools", args.pools))
    changes = {k: v for k, v in given if v is not None}
    settings = dataclasses.replace(TrainSettings(), **changes)
    cache = args.cases_cache or suite_dir() / "rerank-pairs"
    return train_main(fit, load_tokenizer(), cache, args.out or RERANKER_FILE, settings)


def _excerpts(args) -> dict:
    """score's --k and --budget, where given (otherwise the agent's defaults)."""
    return {name: value for name, value in (("k", args.k), ("budget", args.budget)) if value is not None}


if __name__ == "__main__":
    sys.exit(main())
