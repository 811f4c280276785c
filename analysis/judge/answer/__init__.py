"""The answer: the recommended recipe for the job and each GPU class's recipe, the ratios and orders they rest on,
the user's own runs against the nearest matrix recipe, the tables' speed-up baseline and run folders, and measured
runs against the seed article's published figures. It reads the audit's data only through analysis.judge.band."""
