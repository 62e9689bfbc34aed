"""The calendar tools: events read, expanded (RRULE) and written over CalDAV."""
