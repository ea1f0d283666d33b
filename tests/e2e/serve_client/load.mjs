// Load for rfa serve on loopback (tests/e2e/serve_load.sh), with Node's own fetch:
//   node load.mjs concurrent BASE N   N streams at once, each checked against the same request alone
//   node load.mjs many BASE COUNT P   COUNT short requests, P at a time, every one answered 200
// Exits 1 with the reason on the first failure.
const [mode, base, a, b] = process.argv.slice(2);

function die(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

async function post(path, body) {
  const res = await fetch(base + path, {method: "POST", headers: {"Content-Type": "application/json"},
                                       body: JSON.stringify(body)});
  return res;
}

// The events of one stream: its text, ids and finish.
async function stream(body) {
  const res = await post("/v1/completions", {...body, stream: true});
  if (res.status !== 200) die(`stream answered ${res.status}: ${await res.text()}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "", text = "", ids = new Set(), finish = null, done = false;
  for (;;) {
    const {value, done: end} = await reader.read();
    if (end) break;
    buffered += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffered.indexOf("\n\n")) >= 0) {
      const event = buffered.slice(0, cut);
      buffered = buffered.slice(cut + 2);
      if (!event.startsWith("data: ")) die(`not an SSE data line: ${event}`);
      const data = event.slice(6);
      if (data === "[DONE]") { done = true; continue; }
      const chunk = JSON.parse(data);
      if (chunk.error) die(`stream error: ${JSON.stringify(chunk.error)}`);
      ids.add(chunk.id);
      for (const c of chunk.choices) {
        if (c.index !== 0) die(`choice ${c.index} in a one-choice stream`);
        text += c.text;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
  }
  if (!done) die("a stream ended without data: [DONE]");
  if (ids.size !== 1) die(`a stream mixed ${ids.size} ids`);
  return {text, id: [...ids][0], finish};
}

function request(i) {
  return {prompt: `Line ${i}: the`, max_tokens: 30 + (i % 7) * 5, temperature: i % 3 ? 0.9 : 0, seed: 1000 + i};
}

if (mode === "concurrent") {
  const n = Number(a);
  const started = Date.now();
  const results = await Promise.all(Array.from({length: n}, (_, i) => stream(request(i))));
  const seconds = (Date.now() - started) / 1000;
  if (new Set(results.map(r => r.id)).size !== n) die("two streams shared an id");
  for (let i = 0; i < n; ++i) {
    const res = await post("/v1/completions", request(i));
    const alone = await res.json();
    if (alone.choices[0].text !== results[i].text)
      die(`stream ${i} differs from the same request alone:\n  ${JSON.stringify(results[i].text)}\n  ` +
          JSON.stringify(alone.choices[0].text));
    if (alone.choices[0].finish_reason !== results[i].finish) die(`stream ${i} finish ${results[i].finish}`);
  }
  console.log(JSON.stringify({streams: n, seconds, same_as_alone: n}));
} else if (mode === "many") {
  const count = Number(a), parallel = Number(b);
  let next = 0;
  async function worker() {
    while (next < count) {
      const i = next++;
      const res = await post("/v1/completions", {prompt: `Request ${i} `, max_tokens: 4, seed: i});
      const body = await res.json();
      if (res.status !== 200 || body.choices.length !== 1) die(`request ${i}: ${res.status} ${JSON.stringify(body)}`);
    }
  }
  await Promise.all(Array.from({length: parallel}, worker));
  console.log(JSON.stringify({requests: count}));
} else {
  die(`unknown mode ${mode}`);
}
