"""`python -m harness.cli`: how a runtime starts the runner, and the tests the command."""
import sys

from harness.cli import main

sys.exit(main())
