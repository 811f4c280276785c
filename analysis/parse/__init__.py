"""Stage 2, raw files to records: ms-swift logs of any version, run folders and results trees as typed RunRecords."""
