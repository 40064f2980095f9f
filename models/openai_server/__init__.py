"""The server backend: a model behind an OpenAI-compatible HTTP API (chat, embeddings, its tokenizer, a local one)."""
