"""The suite's data files (GPU classes, model shapes, the planner's and the time model's constants, prices), read by
experiments/ and analysis/ alike, from below both (experiments.base.paths.DATA): package data, in the wheel too."""
