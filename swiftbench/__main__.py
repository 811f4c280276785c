"""`python -m swiftbench ...`: the `swiftbench` command (analysis.cli) from an installed wheel or a checkout."""
import sys

from swiftbench import main

sys.exit(main())
