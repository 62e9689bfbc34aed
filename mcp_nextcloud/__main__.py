"""`python -m mcp_nextcloud ...`: the same entry point as the `mcp-nextcloud` console script."""
import sys

from mcp_nextcloud.cli import process_main

sys.exit(process_main())
