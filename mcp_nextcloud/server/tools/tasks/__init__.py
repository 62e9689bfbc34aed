"""The task tools: VTODOs in a CalDAV task list."""
