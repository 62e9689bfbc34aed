"""`mcp-nextcloud deck create-cards`: many Deck cards from one JSON file, each created at most once.

Agents repeat this action (a meeting's action items, a migrated to-do list).
The batch is bounded (BATCH_MAX items), each item carries the caller's id,
every item is validated and resolved (board, stack, labels, assignees) by a
dry run of deck_create_card before the first card is written, outcomes are
reported per item, and a durable journal (cli/journal.py) makes a
rerun - after a failure or a kill - skip every item that completed.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

from mcp_nextcloud.nextcloud.errors import NextcloudError
from mcp_nextcloud.cli import toolspec
from mcp_nextcloud.cli.errors import CliError, report
from mcp_nextcloud.cli.options import add_index, add_json
from mcp_nextcloud.cli.output import dump, plain
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.tool_commands import DEFAULT_TIMEOUT_S, needs_confirm
from mcp_nextcloud.cli.console import stdout

TOOL = "deck_create_card"
BATCH_MAX = 100
ITEM_ID_MAX = 100


def input_schema() -> dict[str, Any]:
    """The --input-file schema, derived from deck_create_card's own input schema."""
    tool = toolspec.load()[TOOL]["input"]
    props = {k: v for k, v in tool["properties"].items() if k != "board"}
    item = {"type": "object", "required": ["id"] + [r for r in tool.get("required", []) if r != "board"],
            "properties": {"id": {"type": "string", "minLength": 1, "maxLength": ITEM_ID_MAX,
                                  "description": "Your id for this card; a rerun skips ids already done"},
                           "board": {**tool["properties"]["board"], "description": "Overrides the batch's board"},
                           **props},
            "additionalProperties": False}
    return {"type": "object", "required": ["board", "cards"],
            "properties": {"board": tool["properties"]["board"],
                           "cards": {"type": "array", "minItems": 1, "maxItems": BATCH_MAX, "items": item}},
            "additionalProperties": False}


def register(deck: Subcommands) -> None:
    """Add `deck create-cards` to the deck group."""
    p = deck.add_parser(
        "create-cards", help="create many cards from a JSON file (per-item outcomes; a rerun never repeats one)",
        description=f"Create up to {BATCH_MAX} Deck cards from --input-file {{\"board\": ..., \"cards\": [{{\"id\": "
        "\"your id\", \"stack\": ..., \"title\": ...}]}. Everything is validated before the first card is "
        "written; a rerun of the same file skips the cards already created.",
        epilog="Example: mcp-nextcloud deck create-cards --input-file cards.json --dry-run")
    p.add_argument("--input-file", metavar="PATH", required=True, help="the batch as JSON (schema: manifest)")
    p.add_argument("--batch-id", metavar="ID", default=None,
                   help="name the batch (default: derived from the file's content and the account)")
    p.add_argument("--dry-run", action="store_true", help="validate and resolve every card; create none")
    p.add_argument("--confirm", action="store_true", help="required to create the cards")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"deadline per request, retries included (default {DEFAULT_TIMEOUT_S:g})")
    add_index(p)
    add_json(p)
    p.manifest_extra = {"inputSchema": input_schema(), "writes": True, "confirm": True,
                        "tool": TOOL, "batch": {"maxItems": BATCH_MAX}}
    p.set_defaults(func=run)


def items_from(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The batch's items as deck_create_card arguments (plus "id"); every shape problem reported at once."""
    schema = input_schema()
    item_props = schema["properties"]["cards"]["items"]["properties"]
    cards = data.get("cards")
    if set(data) - {"board", "cards"} or not isinstance(cards, list) or not cards:
        raise CliError('the batch must be {"board": ..., "cards": [ ... ]} with at least one card', usage=True)
    if len(cards) > BATCH_MAX:
        raise CliError(f"{len(cards)} cards: a batch holds at most {BATCH_MAX}; split the file", usage=True)
    problems, seen, out = [], set(), []
    for n, card in enumerate(cards, 1):
        if not isinstance(card, dict):
            problems.append(f"card {n} is not an object")
            continue
        cid = card.get("id")
        if not isinstance(cid, str) or not cid.strip() or len(cid) > ITEM_ID_MAX:
            problems.append(f"card {n} needs an \"id\" (text, 1-{ITEM_ID_MAX} characters)")
        elif cid in seen:
            problems.append(f"card {n}: id {cid!r} is used twice")
        seen.add(cid)
        unknown = sorted(set(card) - set(item_props))
        if unknown:
            problems.append(f"card {n}: unknown field(s) {', '.join(unknown)}")
        args = {"board": data.get("board"), **{k: v for k, v in card.items() if k in item_props}}
        missing = [k for k in ("board", "stack", "title") if args.get(k) in (None, "")]
        if missing:
            problems.append(f"card {n}: missing {', '.join(missing)}")
        out.append(args)
    if problems:
        raise CliError("the batch is not valid, nothing was created: " + "; ".join(problems[:10]), usage=True)
    return out


def batch_id(account: Any, data: dict[str, Any]) -> str:
    import hashlib   # here: every CLI call builds the parser that imports this module

    raw = json.dumps([getattr(account, "url", ""), getattr(account, "user", ""), data], sort_keys=True)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (CliError, NextcloudError) as err:
        return report(err, args.json, "mcp-nextcloud deck create-cards")


def _run(args: argparse.Namespace) -> int:
    from mcp_nextcloud.cli.journal import DONE, Journal, default_journal_path
    from mcp_nextcloud.cli.tool_run import _account, read_input_file

    data = read_input_file(args.input_file)
    items = items_from(data)
    spec = toolspec.load()[TOOL]
    if needs_confirm(spec) and not args.dry_run and not args.confirm:
        raise CliError("deck create-cards creates cards in your Deck and needs a person's go-ahead: add --confirm, "
                       "or --dry-run to check the batch first", usage=True, status="needs_confirm")
    account = _account()
    bid = args.batch_id or batch_id(account, data)
    journal = Journal(default_journal_path())
    try:
        states = journal.states(bid)
        todo = [a for a in items if states.get(a["id"]) != DONE]
        plans = _validate(spec, account, args, todo)
        if args.dry_run:
            outcomes = [{"id": a["id"], "outcome": "done_before" if states.get(a["id"]) == DONE else "planned",
                         **({"wouldWrite": plans[a["id"]]} if a["id"] in plans else {})} for a in items]
            return _report(bid, outcomes, args.json, dry_run=True)
        outcomes = _execute(spec, account, args, items, plans, journal, bid)
    finally:
        journal.close()
    return _report(bid, outcomes, args.json, dry_run=False)


def _tool_args(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "id" and v is not None}


def _validate(spec: dict[str, Any], account: Any, args: argparse.Namespace,
              todo: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Dry-run every pending card (reads only); any failure stops the batch before its first write."""
    from mcp_nextcloud.cli.tool_exec import ToolSession

    plans: dict[str, dict[str, Any]] = {}
    problems = []
    with ToolSession(spec, account, args, dry_run=True) as session:
        for item in todo:
            try:
                session.call(TOOL, _tool_args(item))
            except CliError as err:
                problems.append(f"{item['id']}: {err}")
                continue
            assert session.dry is not None
            if session.dry.blocked:
                plans[item["id"]] = session.dry.blocked
    if problems:
        raise CliError("the batch is not valid, nothing was created: " + " | ".join(problems[:10]), usage=True,
                       status="invalid_batch")
    return plans


def _execute(spec: dict[str, Any], account: Any, args: argparse.Namespace, items: list[dict[str, Any]],
             plans: dict[str, dict[str, Any]], journal: Any, bid: str) -> list[dict[str, Any]]:
    from mcp_nextcloud.cli.journal import DONE, FAILED, STARTED
    from mcp_nextcloud.cli.tool_exec import ToolSession

    outcomes = []
    with ToolSession(spec, account, args, dry_run=False) as session:
        deck = session.real.deck
        for item in items:
            iid = item["id"]
            entry = journal.get(bid, iid)
            if entry and entry["state"] == DONE:
                outcomes.append({"id": iid, "outcome": "done_before", **(entry["result"] or {})})
                continue
            target = plans[iid]["with"]
            if entry and entry["state"] == STARTED:
                found = _reconcile(deck, entry["target"], item["title"])
                if found is not None:
                    journal.mark(bid, iid, DONE, result={"card": found})
                    outcomes.append({"id": iid, "outcome": "reconciled", "card": found})
                    continue
            existing = _same_title(deck, target["board_id"], target["stack_id"], item["title"])
            journal.mark(bid, iid, STARTED, target={**target, "existing": existing})
            try:
                result = session.call(TOOL, _tool_args(item))
            except CliError as err:
                if err.status == "unknown_outcome":   # the code of a write whose outcome is unknown
                    outcomes.append({"id": iid, "outcome": "unknown", "error": str(err)})
                    continue                     # left `started`: the rerun reads the state first
                state = DONE if err.status == "partial" else FAILED   # partial: the card exists
                journal.mark(bid, iid, state, result={"error": str(err)})
                outcomes.append({"id": iid, "outcome": "partial" if state == DONE else "failed", "error": str(err)})
                continue
            card = (result.structured_content or {}).get("card")
            journal.mark(bid, iid, DONE, result={"card": card})
            outcomes.append({"id": iid, "outcome": "created", "card": card})
    return outcomes


def _same_title(deck: Any, board_id: int, stack_id: int, title: str) -> list[int]:
    """Ids of the cards in this stack whose title is this one (a later reconcile ignores them)."""
    want = " ".join(title.split()).casefold()
    stack = next((s for s in deck.stacks(board_id) if s.id == stack_id), None)
    return [c.id for c in (stack.cards if stack else []) if " ".join(c.title.split()).casefold() == want]


def _reconcile(deck: Any, target: dict[str, Any], title: str) -> dict[str, Any] | None:
    """After a kill between 'started' and 'done': the card this item made, if the server has it."""
    from mcp_nextcloud.server.tools.deck.read import card_entry

    board_id, stack_id = target["board_id"], target["stack_id"]
    new = [cid for cid in _same_title(deck, board_id, stack_id, title) if cid not in set(target["existing"])]
    if not new:
        return None
    card = deck.card(board_id, stack_id, new[0])
    return card_entry(card, board_id)


def _report(bid: str, outcomes: list[dict[str, Any]], as_json: bool, *, dry_run: bool) -> int:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o["outcome"]] = counts.get(o["outcome"], 0) + 1
    bad = counts.get("failed", 0) + counts.get("unknown", 0)
    payload = {"batch": bid, "dryRun": dry_run, "items": outcomes, "summary": counts}
    if bad:
        payload["hint"] = "Rerun the same command: completed cards are skipped, unknown ones are checked first."
    if as_json:
        print(dump(payload), file=stdout())
    else:
        for o in outcomes:
            card = o.get("card") or {}
            what = f"card {card.get('card')} {plain(card.get('title', ''))}" if card else plain(o.get("error", ""))
            print(f"{plain(o['id'])}: {o['outcome']} {what}".rstrip(), file=stdout())
        print(f"batch {bid}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())), file=stdout())
        if bad:
            print(payload["hint"], file=stdout())
    return 1 if bad else 0
