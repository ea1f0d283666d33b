// The official OpenAI client (npm `openai`, pinned in package.json) against rfa serve on
// loopback (tests/e2e/serve_openai.sh): completions and chat, streaming and not, usage,
// and errors surfacing as the client's own error classes.
//   node openai.mjs BASE_URL API_KEY
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({baseURL, apiKey, maxRetries: 0, timeout: 30000});

function check(cond, message) {
  if (!cond) {
    console.error(`FAIL: ${message}`);
    process.exit(1);
  }
}

const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === "run-rfa_gate", `models: ${JSON.stringify(models.data)}`);

const params = {model: "run-rfa_gate", prompt: "Line 7", max_tokens: 24, temperature: 0.8, top_p: 0.95, seed: 11};
const done = await client.completions.create(params);
check(done.choices[0].text.length > 0 && done.choices[0].finish_reason === "length", JSON.stringify(done));
check(done.usage.prompt_tokens === 6 && done.usage.completion_tokens === 24, `usage ${JSON.stringify(done.usage)}`);
let streamed = "";
for await (const chunk of await client.completions.create({...params, stream: true})) streamed += chunk.choices[0]?.text ?? "";
check(streamed === done.choices[0].text, `streamed '${streamed}' != '${done.choices[0].text}'`);

const messages = [{role: "system", content: "Be brief."}, {role: "user", content: "Line 3"}];
const chat = await client.chat.completions.create({model: "x", messages, max_tokens: 16, temperature: 0});
const reply = chat.choices[0].message;
check(reply.role === "assistant" && typeof reply.content === "string", JSON.stringify(chat));
let deltas = "", usage = null, roles = 0;
const stream = await client.chat.completions.create({model: "x", messages, max_tokens: 16, temperature: 0, stream: true,
                                                    stream_options: {include_usage: true}});
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta.role) ++roles;
    deltas += c.delta.content ?? "";
  }
}
check(roles === 1 && deltas === reply.content, `chat stream '${deltas}' (roles ${roles}) != '${reply.content}'`);
check(usage && usage.completion_tokens === chat.usage.completion_tokens, `stream usage ${JSON.stringify(usage)}`);
check(usage.prompt_tokens_details.cached_tokens === usage.prompt_tokens, "the repeated chat was not served from the cache");

// Errors are the client's classes, with the server's message.
try {
  await client.completions.create({...params, max_tokens: -5});
  check(false, "max_tokens -5 was accepted");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.status === 400 && /max_tokens/.test(e.message), `got ${e}`);
}
try {
  await client.chat.completions.create({model: "x", messages: [{role: "wizard", content: "x"}]});
  check(false, "role wizard was accepted");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && /wizard/.test(e.message), `got ${e}`);
}
try {
  await new OpenAI({baseURL, apiKey: "wrong", maxRetries: 0}).models.list();
  check(false, "a wrong key was accepted");
} catch (e) {
  check(e instanceof OpenAI.AuthenticationError && e.status === 401, `got ${e}`);
}
console.log("openai client: all checks passed");
