"""`python -m experiments.launch [options] -- swift sft ...` (what run.json's launch_command records)."""
import sys

from experiments.launch.launcher import main

sys.exit(main())
