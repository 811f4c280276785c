"""Stage 1, recipes and runs: what to run (recipes.yaml, claims/), running it (runner, launcher), what it ran on."""
