"""A bookstore assistant on pydantic-ai, recorded and replayed by evaltape.

Three tools over a small shelf (a fresh copy per episode): ``find_book`` (by title),
``check_stock`` and ``reserve_copy``. ``run`` is the agent function of
``evaltape record --agent bookstore:run``: pydantic-ai's Anthropic model is given the
episode's client (:func:`evaltape.async_client`), and :func:`evaltape.converse` runs the
case, one message or a conversation with the case's user, and builds the trace from the
episode's recorded exchanges.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.usage import UsageLimits

import evaltape

BOOKS = {
    "B-101": {"title": "Pride and Prejudice", "author": "Jane Austen", "copies": 3},
    "B-102": {"title": "Foundation", "author": "Isaac Asimov", "copies": 0},
    "B-103": {"title": "Dune", "author": "Frank Herbert", "copies": 2},
}


@dataclass
class Shelf:
    """The store's books and the reservations made in one episode."""

    books: dict = field(default_factory=lambda: copy.deepcopy(BOOKS))
    reservations: list = field(default_factory=list)


agent = Agent(
    deps_type=Shelf,
    instructions="You are the assistant of a small bookstore. Find a book by its title "
                 "before you check its stock or reserve it. Reserve only for a named "
                 "customer, and say the reservation id.",
)


@agent.tool_plain
def find_book(title: str) -> dict:
    """Find a book by its title: its id, title and author."""
    for book_id, book in BOOKS.items():
        if book["title"].lower() == title.strip().lower():
            return {"book_id": book_id, "title": book["title"], "author": book["author"]}
    raise ModelRetry(f"no book titled {title!r}")


@agent.tool
def check_stock(ctx: RunContext[Shelf], book_id: str) -> dict:
    """How many copies of a book the store has."""
    book = ctx.deps.books.get(book_id)
    if book is None:
        raise ModelRetry(f"unknown book id {book_id!r}")
    return {"book_id": book_id, "copies": book["copies"]}


@agent.tool
def reserve_copy(ctx: RunContext[Shelf], book_id: str, customer: str) -> dict:
    """Reserve one copy of a book for a customer."""
    book = ctx.deps.books.get(book_id)
    if book is None or book["copies"] < 1:
        raise ModelRetry(f"no copy of {book_id!r} to reserve")
    book["copies"] -= 1
    reservation = f"R-{len(ctx.deps.reservations) + 1}"
    ctx.deps.reservations.append(reservation)
    return {"reservation_id": reservation, "book_id": book_id, "customer": customer,
            "copies_left": book["copies"]}


def run(case, client, *, model, stream=False, user=None):
    """The agent function: the case through pydantic-ai on the episode's client."""
    llm = AnthropicModel(model, provider=AnthropicProvider(
        anthropic_client=evaltape.async_client(client)))
    shelf, history = Shelf(), []

    def respond(message: str) -> str:
        result = agent.run_sync(message, model=llm, deps=shelf, message_history=history,
                                usage_limits=UsageLimits(request_limit=case.max_steps or 8))
        history[:] = result.all_messages()
        return result.output

    return evaltape.converse(case, user, respond)
