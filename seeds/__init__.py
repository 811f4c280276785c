"""The seed articles' published figures and claims, reviewed (*.yaml): data read by analysis.core.seeds."""
