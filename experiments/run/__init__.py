"""Stage 2, running it: the runner (run folders, resume, supervision), the papermill notebook, quick runs, imports of
outside runs."""
