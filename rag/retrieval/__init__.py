"""What both index backends share: query and index terms, the vocabulary, and the fusion of BM25 and vector ranks."""
