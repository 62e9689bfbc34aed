"""What an account lacks before its first login, in the words every tool uses (one owner for the fact).

Nextcloud makes a new account's "Personal" calendar and "Contacts" address
book at its first login with the password (a browser login); requests with an
app password never count. An account an admin made and handed an app password
has neither, and the calendar and contacts tools say so instead of answering
as if the account simply had no events or no contacts.
"""
from __future__ import annotations

NEXT_STEP = "Ask the user to log in to Nextcloud once in a browser"

NO_CALENDAR_YET = (f"This account has no calendar yet: Nextcloud makes the Personal calendar at the account's first "
                   f"login in a browser, and an app password does not count. {NEXT_STEP} (or to create a calendar "
                   "in Nextcloud Calendar), then call again (not before).")

NO_ADDRESS_BOOK_YET = ("This account has no address book of its own yet (Nextcloud makes \"Contacts\" at the first "
                       "login in a browser), so only the account directory and the server's own books were searched. "
                       f"{NEXT_STEP} to get it.")


def has_own_calendar(calendars: list) -> bool:
    """Any calendar of the account's own (app calendars, e.g. Deck's, are made without a login)."""
    return any(not c.app for c in calendars)
