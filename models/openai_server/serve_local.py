"""`python -m models.openai_server.serve_local ARGS`: llama-cpp-python's own server (`python -m llama_cpp.server ARGS`) with
the weight layout every other model load of smoldocs uses (models.cpu), so it runs where theirs runs."""

from models.cpu import use_safe_weight_buffers

if __name__ == "__main__":
    use_safe_weight_buffers()
    from llama_cpp.server.__main__ import main

    main()
