// A small OpenAI-compatible chat-completions server over node-llama-cpp, for weft's tests and
// demo (docs/agents.md, "Local model"). Usage: THREADS=1 node shim.mjs MODEL.gguf PORT
//
// Serves GET /health, GET /v1/models and POST /v1/chat/completions (JSON or, with
// `stream: true`, SSE in OpenAI's chunk format). A forced tool choice ("required" or a named
// function) constrains the output with a JSON-schema grammar, so even a tiny model answers with
// a well-formed call; "auto" and "none" answer in text. Tool calls and tool results in the
// history are rendered as text turns. One request at a time; loopback only.
import http from "node:http";
import { getLlama, LlamaChat } from "node-llama-cpp";

const [modelPath, portArg] = process.argv.slice(2);
if (!modelPath) { console.error("usage: node shim.mjs MODEL.gguf [PORT]"); process.exit(2); }
const threads = Number(process.env.THREADS ?? 1);
const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: 4096, threads });
const chat = new LlamaChat({ contextSequence: context.getSequence() });
let ids = 0;
let queue = Promise.resolve();

function text(content) {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content.map((p) => p.text ?? "").join("");
}

function history(messages) {
  const out = [];
  for (const m of messages) {
    if (m.role === "system") out.push({ type: "system", text: text(m.content) });
    else if (m.role === "user") out.push({ type: "user", text: text(m.content) });
    else if (m.role === "tool") out.push({ type: "user", text: `Tool result (${m.tool_call_id}): ${text(m.content)}` });
    else if (m.role === "assistant") {
      const calls = (m.tool_calls ?? []).map((c) => `Called ${c.function.name} with ${c.function.arguments}`);
      out.push({ type: "model", response: [[text(m.content), ...calls].filter(Boolean).join("\n")] });
    }
  }
  out.push({ type: "model", response: [] });
  return out;
}

// The function the request forces, if any: a named one, or the only one under "required".
function forced(req) {
  const tools = (req.tools ?? []).map((t) => t.function);
  const choice = req.tool_choice;
  if (choice && typeof choice === "object") return tools.find((t) => t.name === choice.function?.name);
  if (choice === "required") return tools[0];
  return undefined;
}

async function complete(req) {
  const fn = forced(req);
  const grammar = fn && await llama.createGrammarForJsonSchema(fn.parameters ?? { type: "object", properties: {} });
  // Start each request from an empty context, so prompt_tokens counts the whole prompt
  // (a reused prefix would otherwise be free and make usage depend on the previous request).
  await chat.sequence.clearHistory();
  const meter = chat.sequence.tokenMeter;
  const [in0, out0] = [meter.usedInputTokens, meter.usedOutputTokens];
  const res = await chat.generateResponse(history(req.messages ?? []), {
    grammar, maxTokens: req.max_tokens ?? 256, temperature: req.temperature ?? 0,
  });
  const usage = { prompt_tokens: meter.usedInputTokens - in0, completion_tokens: meter.usedOutputTokens - out0 };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const id = `chatcmpl-${++ids}`;
  const message = fn
    ? { role: "assistant", content: null, tool_calls: [{ id: `call_${ids}`, type: "function", function: { name: fn.name, arguments: res.response } }] }
    : { role: "assistant", content: res.response };
  const finish = fn ? "tool_calls" : (res.metadata?.stopReason === "maxTokens" ? "length" : "stop");
  return { id, object: "chat.completion", created: Math.floor(Date.now() / 1000), model: req.model ?? "smollm2", choices: [{ index: 0, message, finish_reason: finish }], usage };
}

function send(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function stream(res, out) {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const base = { id: out.id, object: "chat.completion.chunk", created: out.created, model: out.model };
  const m = out.choices[0].message;
  const delta = m.tool_calls
    ? { role: "assistant", tool_calls: m.tool_calls.map((c, index) => ({ index, ...c })) }
    : { role: "assistant", content: m.content };
  const chunks = [{ ...base, choices: [{ index: 0, delta, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: out.choices[0].finish_reason }] },
    { ...base, choices: [], usage: out.usage }];
  for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.end("data: [DONE]\n\n");
}

http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/health") return send(res, 200, { status: "ok" });
  if (req.method === "GET" && req.url === "/v1/models") return send(res, 200, { object: "list", data: [{ id: "smollm2", object: "model" }] });
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") return send(res, 404, { error: { message: "not found" } });
  let body = "";
  req.on("data", (c) => { body += c; });
  req.on("end", () => {
    queue = queue.then(async () => {
      let parsed;
      try { parsed = JSON.parse(body); } catch { return send(res, 400, { error: { message: "invalid JSON" } }); }
      try {
        const out = await complete(parsed);
        return parsed.stream ? stream(res, out) : send(res, 200, out);
      } catch (e) { return send(res, 500, { error: { message: String(e?.message ?? e), type: "server_error" } }); }
    });
  });
}).listen(Number(portArg ?? 8090), "127.0.0.1", () => console.log(`listening on 127.0.0.1:${portArg ?? 8090}`));
