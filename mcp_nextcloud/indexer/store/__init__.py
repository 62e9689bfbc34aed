"""The index database: schema and migrations, the one writer, rows, roots, chunking and row preparation."""
