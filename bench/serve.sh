#!/usr/bin/env bash
# What archc serve costs over the library it serves: bench-156m (random
# weights, Llama 2's 32000-token tokenizer) at 1 and 2 threads, each round
# `archc bench`'s prefill and decode, then the server's, each request a
# /v1/completions of PROMPT_LEN token ids (the first changed each request,
# so that the server's prefix cache keeps none of the last), GEN tokens
# streamed greedily with ignore_eos. Printed for the server: its own
# prefill rate (the response's timings.prompt_ms), the time to the first
# token as the client sees it (the HTTP exchange, the prefill and the
# first sample), and the decode rate as the server times it (its GEN − 1
# decodes, the last token sampled not decoded, over timings.predicted_ms,
# which holds the GEN samples too) and as the client sees it
# (the tokens after the first over the time from the first event to the
# last); each the median of RUNS requests after a warm-up, as a share of
# archc bench's in the same round, over ROUNDS rounds (this VM's single
# runs swing by 15% and more from one minute to the next).
#   bench/serve.sh [SPEC]   (needs scripts/fetch-tokenizers.sh's llama2;
#   PROMPT_LEN 128, GEN 64, RUNS 5, ROUNDS 3)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_round_options "${1:-}"
tokenizer="${ARCHC_CACHE:-$HOME/.cache/archc}/tokenizers/llama2/tokenizer.json"
[ -f "$tokenizer" ] || { echo "serve.sh: no $tokenizer: run scripts/fetch-tokenizers.sh" >&2; exit 2; }
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /'
[ "$gen" -ge 2 ] || { echo "serve.sh: GEN must be 2 or more" >&2; exit 2; }
"$archc" compile "$spec" -o "$out/lib.so" --quiet
# (The server is stopped on any exit, a failed request's too.)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT
for round in $(seq "$rounds"); do
for t in 1 2; do
  "$archc" bench "$out/lib.so" --random-weights --prompt-len "$prompt" \
    --gen "$gen" --threads "$t" --runs "$runs" --json > "$out/bench.$round.$t.json"
  "$archc" serve "$out/lib.so" --random-weights --tokenizer "$tokenizer" \
    --port 0 --threads "$t" --quiet 2> "$out/serve.$round.$t.err" &
  pid=$!
  for _ in $(seq 100); do
    grep -q 'on http://127\.0\.0\.1:[0-9]' "$out/serve.$round.$t.err" 2>/dev/null && break
    sleep 0.1
  done
  port=$(sed -n 's/.*on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/serve.$round.$t.err")
  [ -n "$port" ] || { cat "$out/serve.$round.$t.err" >&2; kill "$pid"; exit 1; }
  /usr/bin/python3 - "$port" "$prompt" "$gen" "$runs" > "$out/serve.$round.$t.json" <<'EOF'
import http.client, json, statistics, sys, time
port, prompt, gen, runs = map(int, sys.argv[1:])
rows = []
for run in range(runs + 1):  # the first warms up
    # archc bench's prompt, its first id changed each request.
    ids = [(i * 7919 + 13) % 32000 for i in range(prompt)]
    ids[0] = 1000 + run
    body = json.dumps({"prompt": ids, "max_tokens": gen, "temperature": 0,
                       "ignore_eos": True, "stream": True})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/completions", body=body)
    resp = conn.getresponse()
    times, timings, buf = [], None, b""
    while True:
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            data = event[len(b"data: "):]
            if data == b"[DONE]":
                continue
            e = json.loads(data)
            if e.get("timings"):
                timings = e["timings"]
            elif e["choices"] and e["choices"][0]["text"]:
                times.append(time.perf_counter())
    conn.close()
    if run == 0:
        continue
    if timings["predicted_n"] != gen or timings["prompt_n"] != prompt:
        sys.exit(f"request {run}: {timings}, expected {prompt} prompt "
                 f"tokens and {gen} generated")
    rows.append({"prefill": prompt / (timings["prompt_ms"] / 1e3),
                 "ttft_ms": (times[0] - t0) * 1e3,
                 "decode": (len(times) - 1) / (times[-1] - times[0]),
                 # (The server samples GEN tokens and decodes all but the
                 # last: archc bench's decode steps are the decodes.)
                 "decode_server": (gen - 1) / (timings["predicted_ms"] / 1e3)})
print(json.dumps({k: statistics.median(r[k] for r in rows) for k in rows[0]}))
EOF
  kill "$pid"
  wait "$pid" || true
  pid=
done
done
/usr/bin/python3 - "$out" "$prompt" "$gen" "$rounds" <<'EOF'
import json, statistics, sys
out, prompt, gen, rounds = sys.argv[1], *map(int, sys.argv[2:])
print(f"{prompt} prompt tokens, {gen} generated; each figure the median "
      f"of {rounds} rounds (archc bench, then the server, in each), the "
      f"shares the median of the rounds' own, their range in brackets")
print("| threads | archc bench prefill tok/s (ms) | serve prefill tok/s "
      "| share | serve time to first token ms | archc bench decode tok/s "
      "| serve decode tok/s: its own, the client's | shares |")
print("|---|---|---|---|---|---|---|---|")
med = statistics.median
def share(xs):
    return f"{med(xs):.0%} [{min(xs):.0%}–{max(xs):.0%}]"
for t in (1, 2):
    b = [json.load(open(f"{out}/bench.{r}.{t}.json"))
         for r in range(1, rounds + 1)]
    s = [json.load(open(f"{out}/serve.{r}.{t}.json"))
         for r in range(1, rounds + 1)]
    bp = [x["prefill_tokens_per_s"] for x in b]
    bd = [x["decode_tokens_per_s"] for x in b]
    sp = [x["prefill"] for x in s]
    sd = [x["decode_server"] for x in s]
    sc = [x["decode"] for x in s]
    print(f"| {t} | {med(bp):.1f} ({prompt / med(bp) * 1e3:.1f}) "
          f"| {med(sp):.1f} | {share([p / q for p, q in zip(sp, bp)])} "
          f"| {med(x['ttft_ms'] for x in s):.1f} | {med(bd):.1f} "
          f"| {med(sd):.1f}, {med(sc):.1f} "
          f"| {share([p / q for p, q in zip(sd, bd)])}, "
          f"{share([p / q for p, q in zip(sc, bd)])} |")
EOF
