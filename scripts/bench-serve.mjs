// Measures a running `rfa serve` on loopback (scripts/bench-serve.sh runs it; Node's own fetch):
//   node bench-serve.mjs throughput BASE STREAMS TOKENS   aggregate tokens/s, time between tokens
//   node bench-serve.mjs ttft BASE PROMPT_TOKENS REPEATS  first token, cold and as a cached follow-up
//   node bench-serve.mjs conversations BASE COUNT TOKENS  COUNT conversations of TOKENS prompt tokens
// Prompts are letters and spaces of a seeded generator: with a character tokenizer, about a token each
// (the usage a reply reports says exactly).
// Prints one JSON line.
const [mode, base, a, b] = process.argv.slice(2);

function text(n, seed) {
  let x = seed * 2654435761 % 4294967296 || 1, out = "";
  for (let i = 0; i < n; ++i) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out += "abcdefghij klmnopqrstuvwxyz"[x % 27];
  }
  return out;
}

function median(xs) {
  const s = [...xs].sort((p, q) => p - q);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
}
function quantile(xs, q) {
  const s = [...xs].sort((p, r) => p - r);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN;
}

// One streamed completion: when each token's chunk arrived (ms from the request), its text.
async function stream(prompt, maxTokens) {
  const t0 = performance.now();
  const res = await fetch(base + "/v1/completions", {
    method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({prompt, max_tokens: maxTokens, temperature: 0, stream: true,
                          stream_options: {include_usage: true}})});
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const reader = res.body.getReader(), decoder = new TextDecoder();
  let buffered = "", out = "", times = [], usage = null;
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffered.indexOf("\n\n")) >= 0) {
      const data = buffered.slice(6, cut);
      buffered = buffered.slice(cut + 2);
      if (data === "[DONE]") continue;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices)
        if (c.text) {
          out += c.text;
          times.push(performance.now() - t0);
        }
    }
  }
  return {times, text: out, usage};
}

if (mode === "throughput") {
  const streams = Number(a), tokens = Number(b);
  await stream(text(16, 999), 4);  // warm the slots
  const t0 = performance.now();
  const results = await Promise.all(Array.from({length: streams}, (_, i) => stream(text(16, i + 1), tokens)));
  const seconds = (performance.now() - t0) / 1000;
  const generated = results.reduce((s, r) => s + r.usage.completion_tokens, 0);
  const gaps = results.flatMap(r => r.times.slice(1).map((t, i) => t - r.times[i]));
  console.log(JSON.stringify({streams, tokens_per_stream: tokens, generated, seconds,
                              tokens_per_s: generated / seconds, gap_ms_p50: quantile(gaps, 0.5),
                              gap_ms_p95: quantile(gaps, 0.95), ttft_ms_median: median(results.map(r => r.times[0]))}));
} else if (mode === "ttft") {
  const n = Number(a), repeats = Number(b);
  const cold = [], cached = [], reused = [];
  for (let r = 0; r < repeats; ++r) {
    const prompt = text(n, 100 + r);
    const first = await stream(prompt, 8);
    cold.push(first.times[0]);
    const follow = await stream(prompt + first.text + " and then", 8);
    cached.push(follow.times[0]);
    reused.push(follow.usage.prompt_tokens_details.cached_tokens);
  }
  console.log(JSON.stringify({prompt_tokens: n, ttft_cold_ms: median(cold), ttft_cached_ms: median(cached),
                              cached_tokens: median(reused)}));
} else if (mode === "conversations") {
  const count = Number(a), tokens = Number(b);
  for (let i = 0; i < count; ++i) await stream(text(tokens, 5000 + i), 1);
  console.log(JSON.stringify({conversations: count, prompt_tokens: tokens}));
} else {
  throw new Error(`unknown mode ${mode}`);
}
