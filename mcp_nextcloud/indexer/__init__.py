"""Sources -> SQLite FTS5 index, in layers: each part imports only the parts below it (tests/indexer/test_layers.py).

    indexer.index    Index: the index as users open it (Index.open(path), .grep(...), .search_names(...),
                     .writer()): the store joined with its searches
    indexer.local    a local folder (or desktop sync folder): walk, watch, the desktop client's journal
    indexer.remote   a Nextcloud account over WebDAV: the etag walk, downloads, the sync marks, the sync job's
                     detached worker, the background refresher
    indexer.search   grep: query parsing, ranking, passages; name search
    indexer.jobs     durable jobs (store, runner) and the extraction process pool
    indexer.store    the index database: schema, the one writer, rows, roots, chunking, row preparation
    indexer.models   FileMeta, FileRecord, Root: the records the parts pass between them
"""
