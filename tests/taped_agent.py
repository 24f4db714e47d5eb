"""A user agent (``taped_agent:run``) whose tools read a SQLite database, taped with
``evaltape.tape_tool``: recorded into the episode's cassette, answered from it at replay."""
import os
import sqlite3

import evaltape
from evaltape.recorder.loop import AgentSpec, run_tool_loop

#: Environment variable naming the database file the tools read.
DB_ENV = "TAPED_AGENT_DB"

TOOLS = [
    {"name": "find_order", "description": "An order by id.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                      "required": ["order_id"]}},
    {"name": "count_orders", "description": "How many orders have a status.",
     "input_schema": {"type": "object", "properties": {"status": {"type": "string"}},
                      "required": ["status"]}},
]


@evaltape.tape_tool
def find_order(order_id: str) -> dict:
    """The order's row; LookupError when there is none."""
    with sqlite3.connect(os.environ[DB_ENV]) as conn:
        row = conn.execute("SELECT id, status, total FROM orders WHERE id = ?",
                           (order_id,)).fetchone()
    if row is None:
        raise LookupError(f"no order {order_id}")
    return {"id": row[0], "status": row[1], "total": row[2]}


@evaltape.tape_tool
def count_orders(status: str) -> int:
    """The number of orders with ``status``."""
    with sqlite3.connect(os.environ[DB_ENV]) as conn:
        return conn.execute("SELECT COUNT(*) FROM orders WHERE status = ?",
                            (status,)).fetchone()[0]


def execute(name, args):
    return {"find_order": find_order, "count_orders": count_orders}[name](**args)


SPEC = AgentSpec(system="You are a shop assistant. Use tools.", tools=TOOLS, execute=execute)


def run(case, client, *, model, stream=False):
    return run_tool_loop(client, SPEC, case.input, model=model, stream=stream,
                         max_steps=case.max_steps or 8)


run.spec = SPEC
