"""The Deck tools as the model sees them: names, arguments, descriptions, annotations, output models.

The work is in `deck_list` (reading) and `deck_write` (writing); the shared
look-ups in `deck_read`. There is no deck_delete_card on purpose: archiving
is reversible, losing a task is not. Descriptions are short (tools/list is
paid for in every session) and every argument is described.
"""
from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import _Out
from mcp_nextcloud.server.tools.deck import listing as deck_list
from mcp_nextcloud.server.tools.deck import write as deck_write

# openWorldHint is left out where it would say false (see server/tools/files/tools.py).
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
# Creating twice makes two boards or cards: not idempotent, so the policy asks before each.
CREATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
# An update can replace a description or a label set: what was there is gone, so it is destructive.
UPDATE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
# Moving to the same column twice leaves the same board, and nothing is lost: no approval needed.
MOVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)



def _text(value: Any) -> Any:
    """An id the model sent as a number, as the text every id-or-name argument takes (name look-up decides)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# Ids or names: published as strings (one type costs fewer tools/list bytes than anyOf), numbers accepted.
IdOrName = Annotated[str, BeforeValidator(_text)]
# Published as a bare array: the item type is validated all the same, and says nothing the description does not.
Names = Annotated[list[IdOrName], WithJsonSchema({"type": "array"})]

Board = Annotated[IdOrName, Field(description="Board id or name")]
Card = Annotated[int, Field(description="Card id", ge=0)]
Title = Annotated[str, Field(description="Title", min_length=1, max_length=255)]
Description = Annotated[str | None, Field(description="Markdown", max_length=100_000)]
Due = Annotated[str | None, Field(description="ISO date; a time without Z or offset: account's zone")]
NewDue = Annotated[str | None, Field(description='ISO date; a time without Z or offset: account\'s zone; "" clears')]


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class DeckCard(_Loose):
    """A card with the handles every Deck tool takes."""

    card: int
    board: int
    stack: int
    title: str
    # Present when set; declared so the CLI's --fields knows them (nested: no tools/list bytes).
    due: str | None = None
    done: bool | None = None
    archived: bool | None = None
    labels: list[str] | None = None
    assignees: list[str] | None = None
    description: str | None = None


class DeckListOut(_Out):
    boards: list[dict[str, Any]]
    cards: list[DeckCard]
    total: int
    truncated: bool
    nextCursor: str | None = None


class DeckBoardOut(_Out):
    board: dict[str, Any]


class DeckCardOut(_Out):
    card: DeckCard


class DeckUpdateOut(DeckCardOut):
    changed: list[str]                      # the fields and sets written ([] when nothing differed)


class DeckMoveOut(DeckCardOut):
    verified: bool                          # the card was read back in the target stack
    # also `from`: {stack, title} the card left (a Python keyword, so not a declared field)


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add deck_list_cards, deck_create_board, deck_create_card, deck_update_card and deck_move_card."""

    @server.tool(annotations=READ_ONLY)
    def deck_list_cards(
        board: Annotated[IdOrName | None, Field(description="Id or name; adds labels, members")] = None,
        stack: Annotated[IdOrName | None, Field(description="Id or name")] = None,
        label: Annotated[IdOrName | None, Field(description="Label name")] = None,
        assignee: Annotated[str | None, Field(description="User id")] = None,
        dueBefore: Annotated[str | None, Field(description="ISO date")] = None,
        done: Annotated[bool | None, Field(description="Done or open only")] = None,
        archived: Annotated[bool | None, Field(description="Only archived cards")] = None,
        # The default is said in the description: a published "default" would cost tools/list bytes.
        limit: Annotated[int | None, Field(description="50, max 200", ge=1, le=200)] = None,
        cursor: Annotated[str | None, Field(description="From nextCursor")] = None,
    ) -> Annotated[CallToolResult, DeckListOut]:
        """List Deck cards (one board or all), filtered."""
        filters = deck_list.Filters(stack=stack, label=label, assignee=assignee, due_before=dueBefore,
                                    done=done, archived=bool(archived))
        return deck_list.list_cards(ctx, board=board, filters=filters, limit=limit or deck_list.DEFAULT_LIMIT,
                                    cursor=cursor)

    @server.tool(annotations=CREATE)
    def deck_create_board(
        title: Title,
        stacks: Annotated[Names | None, Field(description="Column titles")] = None,
        labels: Annotated[Names | None, Field(description="Label names")] = None,
        shares: Annotated[Names | None, Field(description="User ids (can edit)")] = None,
    ) -> Annotated[CallToolResult, DeckBoardOut]:
        """Create a Deck board: columns, labels, shares."""
        return deck_write.create_board(ctx, title=title, stacks=stacks, labels=labels, shares=shares)

    @server.tool(annotations=CREATE)
    def deck_create_card(
        board: Board,
        stack: Annotated[IdOrName, Field(description="Stack id or name")],
        title: Title,
        description: Description = None,
        due: Due = None,
        labels: Annotated[Names | None, Field(description="Label names")] = None,
        assignees: Annotated[Names | None, Field(description="User ids")] = None,
    ) -> Annotated[CallToolResult, DeckCardOut]:
        """Add a Deck card."""
        return deck_write.create_card(ctx, board=board, stack=stack, title=title, description=description,
                                      due=due, labels=labels, assignees=assignees)

    @server.tool(annotations=UPDATE)
    def deck_update_card(
        board: Board,
        card: Card,
        title: Annotated[str | None, Field(description="Title", max_length=255)] = None,
        description: Description = None,
        due: NewDue = None,
        done: Annotated[bool | None, Field(description="Done or open")] = None,
        labels: Annotated[Names | None, Field(description="New label set")] = None,
        assignees: Annotated[Names | None, Field(description="New user set")] = None,
    ) -> Annotated[CallToolResult, DeckUpdateOut]:
        """Edit a card; omitted fields are kept."""
        named = {"title": title, "description": description, "due": due, "done": done}
        fields = {k: v for k, v in named.items() if v is not None}
        return deck_write.update_card(ctx, board=board, card=card, fields=fields, labels=labels,
                                      assignees=assignees)

    @server.tool(annotations=MOVE)
    def deck_move_card(
        board: Board,
        card: Card,
        stack: Annotated[IdOrName, Field(description="Stack id or name")],
    ) -> Annotated[CallToolResult, DeckMoveOut]:
        """Move a card to a stack's end, verified."""
        return deck_write.move_card(ctx, board=board, card=card, stack=stack)
