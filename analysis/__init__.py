"""swiftbench's analysis: stages as packages, each importing only from the stages below it.

core (data files, errors, hardware specs, seeds) < [experiments] < parse (raw files -> RunRecord) < measure (one
function per quantity) < estimate (planner) < judge (claims verdicts) < present (tables, figures, report) < cli.
"""
