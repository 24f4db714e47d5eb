"""A user agent addressed as ``example_agent:run`` (the README's protocol), for tests."""
from evaltape.recorder.loop import AgentSpec, run_tool_loop

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


def hijack(case, client, *, model, stream=False):
    """Returns fields the recorder owns: the recorder's values must win."""
    out = run(case, client, model=model, stream=stream)
    out.update(case_id="hijack", trial=99, input="something else", model="x")
    return out


def raises(case, client, *, model, stream=False):
    """A crashing agent."""
    raise RuntimeError("boom in agent")


def not_a_dict(case, client, *, model, stream=False):
    """Returns the wrong type."""
    return "final answer"


def bad_fields(case, client, *, model, stream=False):
    """Returns a dict that is not a trace."""
    return {"final_response": "hi", "steps": "many"}


#: Seconds the ``slow_tool`` agent's tool sleeps.
TOOL_SLEEP_S = 0.2


def _slow_execute(name, args):
    import time
    time.sleep(TOOL_SLEEP_S)
    return execute(name, args)


SLOW_SPEC = AgentSpec(system=SPEC.system, tools=TOOLS, execute=_slow_execute)


def slow_tool(case, client, *, model, stream=False):
    """The shop agent whose tool takes :data:`TOOL_SLEEP_S` seconds."""
    return run_tool_loop(client, SLOW_SPEC, case.input, model=model, stream=stream)
