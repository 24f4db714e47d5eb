"""A user agent addressed as ``example_agent:run`` (the README's protocol), for tests."""
from recorder.loop import AgentSpec, run_tool_loop

TOOLS = [{"name": "lookup_order", "description": "Find an order by id.",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                           "required": ["order_id"]}}]


def execute(name, args):
    return {"order_id": args["order_id"], "status": "shipped"}


SPEC = AgentSpec(system="You are a shop assistant. Use tools.", tools=TOOLS, execute=execute)


def run(case, client, *, model, stream=False):
    return run_tool_loop(client, SPEC, case.input, model=model, stream=stream,
                         max_steps=case.max_steps or 8)


run.spec = SPEC
