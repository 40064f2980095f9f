"""The index on disk and in memory: building, saving, opening, filling embeddings, watching the folder."""
