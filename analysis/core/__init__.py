"""Stage 0, the foundation every stage reads: bad-input errors, data files, GPU specs, the seeds' published figures."""
