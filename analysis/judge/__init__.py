"""Stage 5, verdicts: the seed articles' claims (claims.yaml) judged over run records and their measurements."""
