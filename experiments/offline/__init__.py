"""Offline stand-ins: the random-weight model with the real shapes and tokenizer, local copies of the hub datasets."""
