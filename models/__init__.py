"""Model files, loading, the tokenizer and LLM backends. The only package that imports llama_cpp."""

import os

# llama.cpp's OpenMP threads spin while idle by default; on a busy 2-core laptop (indexing beside a chat, or
# any other load) spinning threads starve each other and 2-thread decode ran up to 5x slower. Read once, when
# llama_cpp loads its library, so it is set here before any import of llama_cpp.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
