"""A local folder as a source: walk, watch (watchdog), and the Nextcloud desktop client's sync journal."""
