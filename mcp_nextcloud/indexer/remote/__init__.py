"""A Nextcloud account as a source: the etag walk over WebDAV, downloads, the background refresher."""
