"""The file-based index: BM25 and MiniLM vectors fused in memory, saved, built, filled, kept live, watched."""
