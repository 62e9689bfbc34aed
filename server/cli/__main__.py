"""`python -m server.cli ...`: the same entry point as the `mcp-nextcloud` console script."""
import sys

from server.cli import process_main

sys.exit(process_main())
