"""People's app passwords, encrypted at rest: Fernet (AES-128-CBC + HMAC-SHA256) with a key file of mode 0600."""
from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

KEY_FILE = "secret.key"


class Vault:
    """Encrypts and decrypts with the server's key (created on first use, readable by this user only)."""

    def __init__(self, folder: Path) -> None:
        self._fernet = Fernet(_key(folder / KEY_FILE))

    def seal(self, secret: str) -> bytes:
        return self._fernet.encrypt(secret.encode("utf-8"))

    def open(self, sealed: bytes) -> str | None:
        """The secret, or None when it was sealed with another key (the key file was replaced)."""
        try:
            return self._fernet.decrypt(sealed).decode("utf-8")
        except InvalidToken:
            return None


def _key(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            raise PermissionError(f"{path} is readable by others: `chmod 600 {path}` (and consider every stored "
                                  "app password exposed: people sign in again after the key is replaced)") from None
        return path.read_bytes().strip()
    key = Fernet.generate_key()
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key
