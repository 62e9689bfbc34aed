"""grep passages start words, like the index: no "The reader" for "here"; a prefix never matches mid-word."""
from __future__ import annotations


def _texts(res):
    return [m["text"] for h in res.hits for p in h.passages for m in p.matches]


def test_passages_never_come_from_inside_longer_words(index, put_text):
    w = index.writer()
    put_text(w, "/a.txt", "The reader restores it. Renew applications here, then the new app.\n")
    res = index.grep("here")
    assert _texts(res) == ["here"]          # not "he re" in "The reader", not "there"
    res = index.grep("new app")
    assert _texts(res) == ["new app"]       # not "renew applications"


def test_prefix_query_passages_start_words(index, put_text):
    w = index.writer()
    put_text(w, "/b.txt", "Configure it, then reconfigure; the configuration is saved.\n")
    res = index.grep("config*")
    assert [t.lower() for t in _texts(res)] == ["config", "config"]   # Configure, configuration: not reconfigure
    offsets = [m["offset"] for h in res.hits for p in h.passages for m in p.matches]
    text = "Configure it, then reconfigure; the configuration is saved.\n"
    assert [text[o:o + 9] for o in offsets] == ["Configure", "configura"]
