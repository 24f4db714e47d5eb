"""A small deterministic MCP stdio server (standard library only): a shop's order desk
with three tools over fixed data, ``lookup_order``, ``check_stock`` and ``return_policy``.

Usage: ``python server.py``; JSON-RPC 2.0, one message a line on stdin/stdout. The agent
of ``cassettes/orders-mcp-scripted`` starts it through ``evaltape mcp-tape``
(docs/example-runs.md).
"""
import json
import sys

ORDERS = {
    "A1001": {"order_id": "A1001", "status": "shipped", "carrier": "UPS",
              "eta": "2026-12-09", "items": ["USB-C dock"], "total": "$89.00"},
    "A1002": {"order_id": "A1002", "status": "delivered", "delivered_on": "2026-12-01",
              "items": ["Wireless headphones"], "category": "audio", "total": "$129.00"},
    "A1003": {"order_id": "A1003", "status": "processing", "items": ["Desk lamp"],
              "total": "$34.00"},
}
STOCK = {
    "KB-200": {"sku": "KB-200", "name": "Mechanical keyboard", "in_stock": 12,
               "warehouse": "Leeds"},
    "MS-310": {"sku": "MS-310", "name": "Wireless mouse", "in_stock": 0,
               "warehouse": "Leeds", "restock": "2026-12-15"},
}
POLICIES = {
    "audio": "Audio items can be returned within 30 days of delivery; damaged items are "
             "replaced free of charge.",
    "default": "Items can be returned within 14 days of delivery in their original packaging.",
}


def _tool(name, description, param, about):
    return {"name": name, "description": description,
            "inputSchema": {"type": "object",
                            "properties": {param: {"type": "string", "description": about}},
                            "required": [param]}}


TOOLS = [
    _tool("lookup_order", "Look up an order's status, items and total by its id.",
          "order_id", "The order id, e.g. A1001."),
    _tool("check_stock", "Check how many units of a product are in stock.",
          "sku", "The product's SKU, e.g. KB-200."),
    _tool("return_policy", "The return policy for a product category.",
          "category", "The product category, e.g. audio."),
]


def call(name, args):
    """The text result of tool ``name`` and whether it is an error."""
    if name == "lookup_order":
        order = ORDERS.get(str(args.get("order_id", "")).upper())
        return (json.dumps(order), False) if order else (f"no order {args.get('order_id')}",
                                                         True)
    if name == "check_stock":
        item = STOCK.get(str(args.get("sku", "")).upper())
        return (json.dumps(item), False) if item else (f"no product {args.get('sku')}", True)
    if name == "return_policy":
        return POLICIES.get(str(args.get("category", "")).lower(), POLICIES["default"]), False
    return f"unknown tool {name}", True


def answer(msg):
    """The response to one request."""
    method, mid = msg["method"], msg["id"]
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "orders", "version": "1"}}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}}
    if method == "tools/call":
        text, error = call(msg["params"]["name"], msg["params"].get("arguments") or {})
        return {"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": text}], "isError": error}}
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}}


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" in msg and "method" in msg:
            sys.stdout.write(json.dumps(answer(msg)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
