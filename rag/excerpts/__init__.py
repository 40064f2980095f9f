"""What the model is shown: numbered excerpts packed under a token budget, and the tools that show them."""
