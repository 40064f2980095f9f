"""Ranking chunks for a query: BM25 terms and scores, MiniLM vectors, and their fusion."""
