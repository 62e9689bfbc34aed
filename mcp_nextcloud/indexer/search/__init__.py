"""grep over the index (query parsing, ranking, passages through reader.find) and name search."""
