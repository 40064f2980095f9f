"""Corpus, chunking, indexes, retrieval, context packing, citations and the search_docs tool.

Depends on the protocols in models.protocols, never on llama_cpp, never on agent.
"""
