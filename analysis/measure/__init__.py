"""Stage 3, measurements of records: each quantity (step time, tokens/s, speed-up, MFU, memory, energy) has one
function."""
