"""The in-process launcher (`python -m experiments.launch`): swift sft with token counts, profiler, memory caps and SDPA
switches."""
