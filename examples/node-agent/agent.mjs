// A tool-calling agent on the Anthropic TypeScript/JavaScript SDK (@anthropic-ai/sdk) that
// knows nothing of evaltape: the SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY itself.
// Usage: node agent.mjs INPUT_FILE [--stream]. Prints the final answer on stdout.
// Every tool answers {"success": true, "tool": NAME, ...arguments} (a stand-in help desk).
import { readFileSync } from "node:fs";
import Anthropic from "@anthropic-ai/sdk";

const TOOLS = ["reset_password", "unlock_account", "check_server_status",
  "search_knowledge_base", "create_ticket"].map((name) => ({
  name, description: `The help desk's ${name} tool.`,
  input_schema: { type: "object", additionalProperties: true },
}));

const task = readFileSync(process.argv[2], "utf8");
const stream = process.argv.includes("--stream");
const client = new Anthropic({ maxRetries: 2 });
const messages = [{ role: "user", content: task }];

for (let turn = 0; turn < 8; turn++) {
  const params = { model: "stand-in", max_tokens: 512, tools: TOOLS, messages };
  const reply = stream
    ? await client.messages.stream(params).finalMessage()
    : await client.messages.create(params);
  messages.push({ role: "assistant", content: reply.content });
  const calls = reply.content.filter((b) => b.type === "tool_use");
  if (calls.length === 0) {
    console.log(reply.content.filter((b) => b.type === "text").map((b) => b.text).join("\n"));
    process.exit(0);
  }
  messages.push({ role: "user", content: calls.map((c) => ({
    type: "tool_result", tool_use_id: c.id,
    content: JSON.stringify({ success: true, tool: c.name, ...c.input }),
  })) });
}
console.error("gave up after 8 turns");
process.exit(2);
