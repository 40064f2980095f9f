"""The shared PostgreSQL store: its schema, the ingester that keeps it fresh, and the search that reads it."""
