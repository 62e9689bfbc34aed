"""Sources -> SQLite FTS5 index, grouped by the five jobs the indexer has.

    indexer.store    the index database: schema, the one writer, rows, roots, chunking, row preparation
                     (Index.open(path), Index.grep(...), Index.search_names(...), Index.writer())
    indexer.search   grep: query parsing, ranking, passages; name search
    indexer.local    a local folder (or desktop sync folder): walk, watch, the desktop client's journal
    indexer.remote   a Nextcloud account over WebDAV: the etag walk, downloads, the background refresher
    indexer.jobs     durable jobs (store, runner, detached worker) and the extraction process pool
    indexer.models   FileMeta, FileRecord, Root: the records the jobs pass between them
"""
