import sys

from server.cli import process_main

sys.exit(process_main())
