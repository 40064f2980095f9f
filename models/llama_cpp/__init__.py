"""The in-process backend: GGUF models run by llama.cpp (chat, tokenizer, MiniLM embedder, KV prefix cache, guards)."""
