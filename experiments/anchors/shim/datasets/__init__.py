"""Stand-in for the Hugging Face `datasets` package, put on the path only where the real one does not import.

torchtune 0.6.1 imports `datasets.load_dataset` at module level; the anchor runs never call it (their rows come from
experiments/anchors/tt_run.py's local_alpaca). experiments/cloud/anchor_gpu.sh records in console.log whether this
stand-in was used.
"""


def load_dataset(*args, **kwargs):
    raise RuntimeError("the Hugging Face datasets package is not installed here (experiments/anchors/shim)")
