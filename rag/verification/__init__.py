"""Whether a cited claim is supported by the text it cites."""
