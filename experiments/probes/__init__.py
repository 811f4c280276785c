"""One-off probes: each answers one dated question (its header says which, and the answer). Nothing imports them; not in
the wheel."""
