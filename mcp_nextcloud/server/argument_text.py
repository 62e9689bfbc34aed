"""Which characters a text argument may hold, and which arguments are multi-line: declared here, once.

Every string a tool receives (at any depth: list items, object keys and
values) is one of three kinds, looked up by (tool, argument):

- **line** (the default, fail closed: a tool added later gets it): a title, a
  name, an address, an id, a time, a header. No control characters at all
  (C0 including tab, CR and LF; DEL; C1), no line or paragraph separator
  (U+2028/U+2029), no bidi embedding, override or isolate (U+202A-U+202E,
  U+2066-U+2069: they make a name display as something else), no invisible
  word separator (U+200B, U+2060-U+2064, U+FEFF, U+206A-U+206F). Kept:
  ZWNJ/ZWJ (U+200C/U+200D, needed by Persian, Indic scripts and emoji), the
  marks LRM/RLM/ALM (U+200E/U+200F/U+061C, needed to write mixed-direction
  names) and the soft hyphen.
- **text**: free text that may span lines (an event's notes, a card's
  Markdown, a mail body, a passage to find). Tab, LF and CR are allowed, and
  so are the separators and bidi controls (real right-to-left prose uses
  them; such text is shown as text, never used as a name or a header). Other
  control characters are refused.
- **path**: a file or folder path (the files tools). No control character
  (nor U+2028/U+2029, U+FFFE/U+FFFF), but format characters are kept: a
  file another client named with a zero-width space or a bidi mark exists,
  and its path must still open it.
- **verbatim**: a file's whole content (files_write). Anything valid Unicode;
  a text file may hold a form feed or an escape sequence, and WebDAV carries
  the bytes as a body, not inside XML.

In every kind but verbatim, U+FFFE and U+FFFF are refused too: XML 1.0 (every
WebDAV/CalDAV/CardDAV answer) cannot carry them or the C0 controls, so one
stored character would make the object unreadable by every client.

An empty string is refused for time and id arguments (`end: ""` is not "no
end"), except where the tool documents that "" clears the field.
"""
from __future__ import annotations

import re

LINE, TEXT, PATH, VERBATIM = "line", "text", "path", "verbatim"

# (tool, argument) -> kind, for the arguments that are not one line. One entry per field, not per tool's
# guess; tests/server/test_argument_text.py checks every entry names a real argument.
KINDS: dict[tuple[str, str], str] = {
    ("calendar_create_event", "description"): TEXT,
    ("calendar_update_event", "description"): TEXT,
    ("meet_schedule", "description"): TEXT,
    ("deck_create_card", "description"): TEXT,
    ("deck_update_card", "description"): TEXT,
    ("mail_compose", "body"): TEXT,
    ("files_read", "find"): TEXT,
    ("mail_read", "find"): TEXT,
    ("files_grep", "query"): TEXT,
    ("files_write", "content"): VERBATIM,
    ("talk_post", "message"): TEXT,
    ("tasks_create", "description"): TEXT,
    ("tasks_update", "description"): TEXT,
    ("files_move", "to"): PATH,
    **{(tool, "path"): PATH for tool in ("files_search", "files_grep", "files_read", "files_write",
                                         "files_share_internal", "files_move", "files_delete", "files_restore",
                                         "files_history")},
}

# Arguments that name a time or an object: "" is never a value of theirs (rule 2: one name per concept).
TIME_ARGUMENTS = frozenset({"start", "end", "due", "dueBefore", "after", "before", "modifiedAfter"})
ID_ARGUMENTS = frozenset({"uid", "calendar", "board", "stack", "id", "replaces"})
# Where the tool's description says "" clears the field.
EMPTY_CLEARS = frozenset({("deck_update_card", "due"), ("tasks_update", "due")})

_SURROGATES = "\ud800-\udfff"   # alone in a str (a pair is one character): no encoding can carry it
_ALWAYS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff" + _SURROGATES
_LINE_ONLY = "\t\n\r\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b\u2060-\u2064\u206a-\u206f\ufeff"
_REFUSED = {LINE: re.compile(f"[{_ALWAYS}{_LINE_ONLY}]"), TEXT: re.compile(f"[{_ALWAYS}]"),
            PATH: re.compile(f"[{_ALWAYS}\t\n\r\u2028\u2029]"), VERBATIM: re.compile(f"[{_SURROGATES}]")}


def kind_of(tool: str, argument: str) -> str:
    """The declared kind of one argument: line unless declared otherwise."""
    return KINDS.get((tool, argument), LINE)


def must_not_be_empty(tool: str, argument: str) -> bool:
    """True for a time or id argument whose tool gives "" no meaning."""
    return (argument in TIME_ARGUMENTS or argument in ID_ARGUMENTS) and (tool, argument) not in EMPTY_CLEARS


def character_problem(text: str, kind: str) -> str | None:
    """Why `text` cannot be a value of this kind (naming the code point and where, never the text), or None."""
    pattern = _REFUSED.get(kind)
    found = pattern.search(text) if pattern is not None else None
    if found is None:
        return None
    char = found.group()
    what = _describe(char)
    allowed = {LINE: "one line of text: no tab, line break or other control or format character",
               PATH: "a path: no tab, line break or other control character",
               VERBATIM: "text in Unicode (any character, but no lone surrogate)"}.get(
                   kind, "text where only tab and line breaks may be control characters")
    return f"contains {what} (U+{ord(char):04X}) at character {found.start()}; this argument is {allowed}"


def _describe(char: str) -> str:
    code = ord(char)
    if char in "\t\n\r" or code < 0x20 or 0x7F <= code <= 0x9F:
        return "a control character"
    if char in "\u2028\u2029":
        return "a line separator"
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return "a bidirectional override"
    if char in "\ufffe\uffff":
        return "a Unicode noncharacter"
    if 0xD800 <= code <= 0xDFFF:
        return "a lone surrogate (half of a UTF-16 pair, not a character)"
    return "an invisible format character"
