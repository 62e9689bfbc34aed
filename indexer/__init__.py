"""Sources -> SQLite FTS5 index: the store, grep, the local folder source, extraction, sync jobs.

Public entry points (import them from their modules):

    indexer.store     Index.open(path), Index.grep(...), Index.search_names(...), Index.writer(),
                      default_index_path(account)
    indexer.writer    IndexWriter: upsert, store_document, record_failure, remove, remove_under, ...
    indexer.models    FileMeta, FileRecord
    indexer.pipeline  ExtractionPool, index_bytes
    indexer.local     index_folder(index, folder), index_one(...)
    indexer.watch     FolderWatcher(index, folder)
    indexer.journal   open_journal(folder): the Nextcloud desktop client's sync journal
"""
