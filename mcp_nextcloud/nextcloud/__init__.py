"""The only code that speaks HTTP to Nextcloud: WebDAV, OCS, CalDAV, CardDAV, Deck, Talk, Mail, and the one error table.

Imports nothing else of this project. Each module is imported by its own name (the error table, which every
layer matches errors with, costs no HTTP client that way). Typical use:

    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import load_account
    with NextcloudClient(load_account()) as nc:
        item = nc.webdav.stat("/Documents/report.pdf")
"""
