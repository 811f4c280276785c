"""Stage 1, what to run: the matrix (recipes.yaml), the claims audit's experiments (claims/), rendered into swift sft
command lines."""
