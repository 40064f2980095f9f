"""Reading a docs folder: which files, their formats, their blocks, and heading-aware chunks."""
