"""The shared base both stages import: bad-input errors, the suite's paths and data files, hardware classes, and the
run-folder contract."""
