"""The people tools: contacts (CardDAV) and the directory that resolves names to accounts and e-mails."""
