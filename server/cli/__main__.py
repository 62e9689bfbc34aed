"""`python -m server.cli ...`: the same entry point as the `mcp-nextcloud` console script."""
import sys

from server.cli import main

sys.exit(main())
