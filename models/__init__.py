"""Model files, loading, the tokenizer and LLM backends. The only package that imports llama_cpp."""
