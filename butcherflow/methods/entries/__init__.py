"""The number kernel: parsing entries (exact, typeset, numeric), their precision and balls."""
