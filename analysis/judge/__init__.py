"""Stage 5, judgement, in two jobs that never import each other: the claims audit (analysis.judge.audit: the seed
articles' claims and the project's findings, claims.yaml, judged over run records and their measurements) and the
answer (analysis.judge.answer: the recommended recipe, each GPU class's recipe, the user's own runs). What both read
is analysis.judge.band; analysis.judge.cli is the `swiftbench claims` command."""
