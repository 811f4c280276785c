"""Stage 4, estimates: the memory/time/cost planner and its validation against the measured runs; the full run
predicted from a quick (cut) one (quick.py)."""
