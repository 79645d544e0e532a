#!/usr/bin/env python3
"""Drives an `archc serve` process as an OpenAI client would, and checks it.

  check_serve.py MODE --log ERR [options] -- archc serve ... --port 0

Starts the server (its stderr to ERR), waits for its listening line, runs
MODE's requests, stops it with SIGTERM and requires exit status 0.

conversation: --users JSON, -n N. A chat whose user messages are USERS and
  whose assistant messages are the server's replies, max_tokens N,
  temperature 0; the second turn streamed (its deltas the reply). The
  prompts, token ids, kept positions and replies are then checked against
  jinja2, the reference tokenizer and fresh runs by check_chat.py on ERR.
protocol: --lib LIB --weights W --tokenizer DIR. Stop strings, max_tokens,
  /v1/completions against `archc run`, seeded sampling, /tokenize against
  the reference tokenizer and /detokenize, each error the server answers
  (and that it still serves after each), a client that leaves mid-stream,
  a client that sends nothing (the server started with --timeout 2).
nochat: chat requests refused where the model has no chat template, while
  /v1/completions serves.
eos: --ids JSON, a prompt whose greedy next token the server's tokenizer
  holds special (a stop token): the completion stops before it, and with
  ignore_eos generates its budget.
tools: --format FILE (test/e2e/Inputs/tools/*.json), a model from
  steer_model.py whose replies FILE's chains make. A request with tools gets
  the reply's calls as tool_calls (names, arguments, content around them,
  finish tool_calls) and its thought as reasoning_content, whole and
  streamed alike (no call's text streamed as content); a reply cut inside
  its thought is all reasoning; with tool_choice none, or without tools, the reply is content
  as written; parallel_tool_calls false keeps the first call; a reply cut
  by max_tokens stays content, and so does a malformed call (FILE's
  "malformed" template kwargs lead to it). With
  "second_turn", the calls go back with the tools' answers and the prompt
  must be jinja2's rendering of that conversation (--template, the
  tokenizer_config.json FILE's model directory holds: --model DIR).
  --expect-content: a server without a parser, the calls left as content.
logits: --spec SPEC --seed N (the weights' archref seed), the server
  started with --verbose-prompt: each generated token's logprob and top
  alternatives against the PyTorch reference's log-softmax; a chat's,
  whole and streamed; the penalties and logit_bias against the reference's
  greedy tokens shaped alike; top_k and min_p; their errors.
Every mode ends with a request being read when SIGTERM comes (503).
"""
import argparse
import http.client
import json
import math
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_chat  # noqa: E402


def fail(msg):
    sys.exit("check_serve: " + msg)


class Server:
    def __init__(self, cmd, log):
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        line = self.proc.stderr.readline()
        self.log.write(line)
        m = re.search(rb"on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            fail(f"no listening line: {line!r}")
        self.port = int(m.group(1))
        # (The rest of its stderr to the log as it comes: a full pipe would
        # block the server.)
        self.copier = threading.Thread(target=self._copy, daemon=True)
        self.copier.start()

    def _copy(self):
        for line in self.proc.stderr:
            self.log.write(line)
            self.log.flush()

    def request(self, method, path, body=None, raw=None):
        """(status, headers, body bytes) of one request."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        data = raw if raw is not None else (
            json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, body=data,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        out = r.status, dict(r.getheaders()), r.read()
        conn.close()
        return out

    def post(self, path, body, status=200):
        st, _, data = self.request("POST", path, body)
        if st != status:
            fail(f"POST {path} {json.dumps(body)[:200]}: status {st}, "
                 f"expected {status}: {data[:300]!r}")
        return json.loads(data)

    def stream(self, path, body):
        """The events of a streamed response, parsed ('[DONE]' last)."""
        st, headers, data = self.request("POST", path, dict(body, stream=True))
        if st != 200 or headers.get("Content-Type") != "text/event-stream":
            fail(f"stream: status {st}, headers {headers}: {data[:300]!r}")
        events = []
        for block in data.decode("utf-8").split("\n\n"):
            if not block:
                continue
            if not block.startswith("data: "):
                fail(f"stream: not an event: {block!r}")
            payload = block[len("data: "):]
            events.append(payload if payload == "[DONE]"
                          else json.loads(payload))
        if events[-1] != "[DONE]":
            fail(f"stream: no [DONE] at the end: {events[-1]}")
        return events[:-1]

    def raw(self, data, read=True):
        """Sends bytes on a socket of its own; the response's bytes."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        s.sendall(data)
        if not read:
            s.close()
            return None
        resp = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            resp += chunk
        s.close()
        return resp

    def healthy(self):
        st, _, data = self.request("GET", "/health")
        if st != 200 or json.loads(data) != {"status": "ok"}:
            fail(f"/health: {st} {data!r}")

    def stop(self, pending=None):
        """SIGTERM; `pending`: a socket whose request the server is still
        reading, which must be answered 503."""
        self.proc.send_signal(signal.SIGTERM)
        if pending is not None:
            resp = pending.makefile("rb").read()
            pending.close()
            if not resp.startswith(b"HTTP/1.1 503 "):
                fail(f"a request cut by SIGTERM: {resp[:80]!r}")
            print("a request being read at SIGTERM: 503")
        rc = self.proc.wait(timeout=60)
        self.copier.join(timeout=60)
        self.log.close()
        if rc != 0:
            fail(f"the server exited {rc} after SIGTERM")
        with open(self.log.name, "rb") as f:
            if not f.read().rstrip().endswith(b"archc serve: stopped"):
                fail("no 'stopped' line at the log's end")
        print("stopped by SIGTERM: exit 0")


def stream_text(events, chat):
    """The text a stream's events make, its finish reason, its usage."""
    text, finish, usage = "", None, None
    kind = "chat.completion.chunk" if chat else "text_completion"
    for e in events:
        if e["object"] != kind:
            fail(f"a stream's event is not a {kind}: {e}")
        if "usage" in e:
            usage = e["usage"]
        for c in e["choices"]:
            text += (c["delta"].get("content", "") if chat else c["text"])
            finish = c["finish_reason"] or finish
    return text, finish, usage


def conversation(srv, args):
    users = json.loads(args.users)
    messages = []
    for i, user in enumerate(users, 1):
        messages.append({"role": "user", "content": user})
        body = {"model": "any", "messages": messages, "max_tokens": args.n,
                "temperature": 0}
        if i == 2:
            # Streamed: the deltas make the reply; the usage comes last.
            events = srv.stream("/v1/chat/completions",
                                dict(body, stream_options={
                                    "include_usage": True}))
            if events[0]["choices"][0]["delta"] != {"role": "assistant",
                                                    "content": ""}:
                fail(f"the stream's first delta: {events[0]}")
            text, finish, usage = stream_text(events, True)
            if events[-1]["choices"] != [] or usage is None:
                fail(f"the stream's last event: {events[-1]}")
            print(f"turn {i}: streamed in {len(events)} events")
            whole = {"object": "chat.completion", "usage": usage,
                     "choices": [{"finish_reason": finish, "message": {
                         "role": "assistant", "content": text}}]}
        else:
            whole = srv.post("/v1/chat/completions", body)
        reply = whole["choices"][0]["message"]
        if reply["role"] != "assistant" or \
                whole["object"] != "chat.completion":
            fail(f"turn {i}: {whole}")
        u = whole["usage"]
        print(f"turn {i}: {u['prompt_tokens']} prompt tokens, "
              f"{u['prompt_tokens_details']['cached_tokens']} cached, "
              f"{u['completion_tokens']} generated, finish "
              f"{whole['choices'][0]['finish_reason']}")
        messages.append({"role": "assistant", "content": reply["content"]})


def expect_error(srv, path, body, status, needle, raw=None):
    st, _, data = srv.request("POST", path, body, raw=raw)
    try:
        err = json.loads(data)["error"]
    except (ValueError, KeyError):
        fail(f"{path} {body}: not an error body: {data[:300]!r}")
    if st != status or err["code"] != status or needle not in err["message"]:
        fail(f"{path} {str(body)[:100]}: {st} {err}, expected {status} "
             f"with {needle!r}")
    print(f"{status}: {err['message']}")
    srv.healthy()


def protocol(srv, args):
    chat = "/v1/chat/completions"
    base = {"messages": [{"role": "user", "content": "Hello there"}],
            "temperature": 0, "max_tokens": 12}
    st, _, data = srv.request("GET", "/v1/models")
    models = json.loads(data)["data"]
    print(f"models: {models[0]['id']}, max_model_len "
          f"{models[0]['max_model_len']}")

    # A stream's deltas make the text of the whole response.
    full = srv.post(chat, base)["choices"][0]["message"]["content"]
    text, finish, _ = stream_text(srv.stream(chat, base), True)
    if text != full:
        fail(f"streamed {text!r}, whole {full!r}")
    print(f"stream: the whole response's {len(full)} bytes")
    # Stop strings cut the text where the first one starts, whole or
    # streamed, held back across tokens.
    stop = full[4:7]
    cut = full[:full.find(stop)]
    whole = srv.post(chat, dict(base, stop=["\u00e9\u00e9\u00e9", stop]))
    text, finish, _ = stream_text(srv.stream(chat, dict(base, stop=stop)),
                                  True)
    if whole["choices"][0]["message"]["content"] != cut or text != cut or \
            whole["choices"][0]["finish_reason"] != "stop" or \
            finish != "stop":
        fail(f"stop {stop!r}: {whole} / {text!r} {finish}, expected "
             f"{cut!r} of {full!r}")
    print(f"stop: cut at {len(cut)} of {len(full)} bytes, whole and streamed")
    zero = srv.post(chat, dict(base, max_tokens=0))
    if zero["choices"][0]["message"]["content"] != "" or \
            zero["choices"][0]["finish_reason"] != "length":
        fail(f"max_tokens 0: {zero}")
    print("max_tokens 0: empty, finish length")

    # /v1/completions: the text `archc run` generates from the same prompt
    # (its stdout echoes the prompt first), from text and from token ids.
    prompt = "Once upon a time"
    run = subprocess.run(
        ["archc", "run", args.lib, "--weights", args.weights, "--tokenizer",
         os.path.join(args.tokenizer, "tokenizer.json"), "--prompt", prompt,
         "-n", "8", "--temperature", "0", "--quiet"],
        capture_output=True, check=True).stdout.decode("utf-8")
    if not run.startswith(prompt):
        fail(f"archc run: {run!r}")
    expected = run[len(prompt):-1]
    got = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": 8,
                                       "temperature": 0})
    ids = srv.post("/tokenize", {"content": prompt, "add_special": True})
    by_ids = srv.post("/v1/completions", {"prompt": ids["tokens"],
                                          "max_tokens": 8, "temperature": 0})
    in_list = srv.post("/v1/completions", {"prompt": [ids["tokens"]],
                                           "max_tokens": 8, "temperature": 0,
                                           "logprobs": False})
    streamed, _, _ = stream_text(srv.stream(
        "/v1/completions", {"prompt": prompt, "max_tokens": 8,
                            "temperature": 0}), False)
    for name, text in (("text", got["choices"][0]["text"]),
                       ("ids", by_ids["choices"][0]["text"]),
                       ("ids in a list", in_list["choices"][0]["text"]),
                       ("stream", streamed)):
        if text != expected:
            fail(f"completions from {name}: {text!r}, archc run {expected!r}")
    print(f"completions: archc run's {len(expected)} bytes, from text, ids, "
          f"ids in a list and a stream")

    # Sampling: a seed gives the same text again.
    sampled = [srv.post(chat, dict(base, temperature=0.9, seed=7))
               ["choices"][0]["message"]["content"] for _ in range(2)]
    if sampled[0] != sampled[1]:
        fail(f"seed 7 twice: {sampled}")
    print("seed: the same text twice")

    # /tokenize is the reference tokenizer's; /detokenize gives the text.
    text = "Héllo wörld, 日本語 🙂  two  spaces"
    toks = srv.post("/tokenize", {"content": text})["tokens"]
    ref = check_chat.reference_ids(args.tokenizer, text)
    back = srv.post("/detokenize", {"tokens": toks})["content"]
    if toks != ref or back != text:
        fail(f"tokenize: {toks} (reference {ref}), back {back!r}")
    print(f"tokenize: {len(toks)} ids as the reference tokenizer's, and back")

    # Errors: a status and a message naming the problem; served after.
    expect_error(srv, chat, None, 400, "the body is not JSON", raw=b"{nope")
    expect_error(srv, chat, None, 400, "not JSON", raw=b'{"a": "\xff"}')
    expect_error(srv, chat, None, 400,
                 "the body nests more than 128 arrays and objects",
                 raw=b"[" * 100000)
    expect_error(srv, "/v1/completions", None, 400,
                 "the body holds more than 2097152 values",
                 raw=b'{"prompt": [' + b"0," * (1 << 21) + b'0]}')
    expect_error(srv, chat, [1], 400, "not a JSON object")
    expect_error(srv, chat, {"messages": []}, 400,
                 "'messages' must be a non-empty array")
    expect_error(srv, chat, {"messages": [{"content": "x"}]}, 400,
                 "'messages' [0] must be an object with a string 'role'")
    expect_error(srv, chat, dict(base, n=2), 400,
                 "'n' is not supported by archc serve")
    expect_error(srv, chat, dict(base, presence_penalty=2.5), 400,
                 "'presence_penalty' must be a number in [-2, 2]")
    expect_error(srv, chat, dict(base, temperature=5), 400,
                 "'temperature' must be a number in [0, 2]")
    expect_error(srv, chat, dict(base, top_p=0), 400,
                 "'top_p' must be a number in (0, 1]")
    expect_error(srv, chat, dict(base, reasoning_format="qwen3"), 400,
                 "'reasoning_format' must be \"auto\", \"none\" or "
                 "\"deepseek\"")
    expect_error(srv, chat, dict(base, max_tokens=-3), 400,
                 "'max_tokens' must be an integer in [0, 2147483647]")
    expect_error(srv, chat, dict(base, stop=["x"] * 17), 400,
                 "'stop' holds more than 16 strings")
    expect_error(srv, chat, dict(base, stop=[""]), 400,
                 "'stop' strings must be 1 to 256 bytes")
    expect_error(srv, chat, dict(base, response_format={
        "type": "yaml"}), 400, "'response_format' must be")
    expect_error(srv, chat, dict(base, messages=[
        {"role": "system", "content": "x"},
        {"role": "user", "content": "y"}]), 400,
        "the chat template: ")
    expect_error(srv, chat, dict(base, messages=[
        {"role": "user", "content": "word " * 200}]), 400,
        "more than the model's context (max_seq_len 160)")
    expect_error(srv, chat, dict(base, messages=[
        {"role": "user", "content": "a\u0000b"}]), 400, "NUL character")
    expect_error(srv, "/v1/completions", {"prompt": [[1, 2], [3]]}, 400,
                 "holds several prompts")
    expect_error(srv, "/v1/completions", {"prompt": ["a", "b"]}, 400,
                 "holds several prompts")
    expect_error(srv, "/v1/completions", {"prompt": [1, 99999]}, 400,
                 "'prompt': token 99999 is outside the vocabulary [0, 32000)")
    expect_error(srv, "/v1/completions", {"prompt": "x", "echo": True},
                 400, "'echo' is not supported")
    expect_error(srv, "/detokenize", {"tokens": [5, -1]}, 400,
                 "'tokens' must be an array of token ids")
    st, headers, data = srv.request("GET", "/v1/chat/completions")
    if st != 405 or headers.get("Allow") != "POST":
        fail(f"GET on a POST endpoint: {st} {headers}")
    st, _, _ = srv.request("GET", "/v2/nothing")
    if st != 404:
        fail(f"an unknown path: {st}")
    print("405 with Allow: POST; 404")

    # Hostile HTTP: each answered by its status; the server serves after.
    raws = [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /health HTTP/2.0\r\n\r\n", 505),
        (b"GET /health HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", 431),
        (b"POST /tokenize HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
        (b"POST /tokenize HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400),
        (b"POST /tokenize HTTP/1.1\r\nContent-Length: 5\r\n"
         b"Content-Length: 6\r\n\r\n", 400),
        (b"POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
         501),
        (b"GET /health HTTP/1.1\r\nno colon\r\n\r\n", 400),
    ]
    for data, status in raws:
        resp = srv.raw(data)
        line = resp.split(b"\r\n", 1)[0].decode()
        if not line.startswith(f"HTTP/1.1 {status} "):
            fail(f"{data[:60]!r}: {line!r}, expected {status}")
        print(f"raw {data[:24]!r}...: {line}")
        srv.healthy()
    # A body shorter than its length, the client gone: no answer, served.
    srv.raw(b"POST /tokenize HTTP/1.1\r\nContent-Length: 100\r\n\r\n{",
            read=False)
    srv.post("/tokenize", {"content": "after"})
    # Expect: 100-continue gets its interim response before the body.
    body = b'{"content": "hi"}'
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    s.sendall(b"POST /tokenize HTTP/1.1\r\nExpect: 100-continue\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body))
    interim = s.recv(100)
    s.sendall(body)
    resp = s.makefile("rb").read()
    s.close()
    if interim != b"HTTP/1.1 100 Continue\r\n\r\n" or \
            not resp.startswith(b"HTTP/1.1 200 OK\r\n"):
        fail(f"Expect: 100-continue: {interim!r}, then {resp[:80]!r}")
    print("Expect: 100-continue: 100 Continue, then 200")
    # A client that sends nothing is answered 408 after --timeout (2 s),
    # and holds only its own connection: others are served meanwhile.
    t0 = time.time()
    silent = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    silent.sendall(b"POST /tokenize HTTP/1.1\r\n")
    srv.healthy()
    srv.post("/tokenize", {"content": "meanwhile"})
    # (Served while the silent one is still unanswered.)
    answered_first = bool(select.select([silent], [], [], 0)[0])
    resp = silent.makefile("rb").read()
    silent.close()
    waited = time.time() - t0
    if not resp.startswith(b"HTTP/1.1 408 ") or not 1.5 < waited < 30 or \
            answered_first:
        fail(f"a silent client: {resp[:80]!r} after {waited:.1f} s, "
             f"answered before the others: {answered_first}")
    print("a silent client: 408 after --timeout, others served meanwhile")
    srv.healthy()
    # 32 connections at once are served (none answered while their
    # requests are unfinished); one more is answered 503. (A connection
    # of an earlier request may still be closing: then a try again.)
    for attempt in range(5):
        held = []
        for _ in range(32):
            held.append(socket.create_connection(("127.0.0.1", srv.port),
                                                 timeout=60))
            held[-1].sendall(b"GET /health HTTP/1.1\r\n")
        time.sleep(0.2)
        if select.select(held, [], [], 0)[0]:
            for s in held:
                s.close()
            time.sleep(1.5)
            continue
        extra = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        resp = extra.makefile("rb").read()
        extra.close()
        for s in held:
            s.close()
        break
    else:
        fail("32 connections at once: some answered before their request")
    if not resp.startswith(b"HTTP/1.1 503 ") or \
            b"more than 32 connections at once" not in resp:
        fail(f"the 33rd connection: {resp[:200]!r}")
    for _ in range(50):  # (until the 32 have closed)
        if srv.request("GET", "/health")[0] == 200:
            break
        time.sleep(0.1)
    srv.healthy()
    print("the 33rd connection at once: 503")
    # Clients that leave after their request, streamed or not: the
    # generation (140 tokens asked) ends, and the server serves after.
    # (Each one's request logged before the next step: its connection's
    # thread may be read after the next request's, slowly under the
    # sanitizers, and then meet the server stopping at the test's end.)
    def left():
        with open(args.log, encoding="utf-8", errors="replace") as f:
            return len(re.findall(r"the client left", f.read()))
    for stream in (True, False):
        before = left()
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        body = json.dumps(dict(base, max_tokens=140, stream=stream)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        s.close()
        for _ in range(600):
            if left() > before:
                break
            time.sleep(0.1)
        else:
            fail("a client that left after its request: not logged")
        srv.post("/tokenize", {"content": "after"})
    print("clients that left after their request: served after")


def eos(srv, args):
    """The server's tokenizer makes the greedy first token after --ids a
    special (stop) token: without ignore_eos the completion stops before
    it; with it, the budget is generated, that token first."""
    ids = json.loads(args.ids)
    body = {"prompt": ids, "max_tokens": 5, "temperature": 0}
    for stream in (False, True):
        if stream:
            text, finish, usage = stream_text(srv.stream(
                "/v1/completions", dict(body, stream_options={
                    "include_usage": True})), False)
        else:
            got = srv.post("/v1/completions", body)
            text, finish, usage = (got["choices"][0]["text"],
                                   got["choices"][0]["finish_reason"],
                                   got["usage"])
        if text != "" or finish != "stop" or usage["completion_tokens"]:
            fail(f"at the stop token: {text!r} {finish} {usage}")
    got = srv.post("/v1/completions", dict(body, ignore_eos=True))
    if got["usage"]["completion_tokens"] != 5 or \
            got["choices"][0]["finish_reason"] != "length":
        fail(f"ignore_eos: {got}")
    print("the stop token first: 0 tokens, finish stop (whole and "
          "streamed); with ignore_eos 5 tokens, finish length")


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "The time in a time zone",
        "parameters": {"type": "object", "properties": {
            "timezone": {"type": "string"}}}}}]


def stream_calls(events):
    """A chat stream's content, tool calls (by index, their arguments'
    pieces joined), finish reason and reasoning (None where none came)."""
    content, calls, finish, reasoning = "", {}, None, None
    for e in events:
        for c in e["choices"]:
            delta = c["delta"]
            content += delta.get("content") or ""
            if "reasoning_content" in delta:
                reasoning = (reasoning or "") + delta["reasoning_content"]
            for t in delta.get("tool_calls", []):
                call = calls.setdefault(t["index"], {
                    "id": "", "type": "", "name": "", "arguments": ""})
                call["id"] += t.get("id", "")
                call["type"] += t.get("type", "")
                call["name"] += t.get("function", {}).get("name", "")
                call["arguments"] += t.get("function", {}).get("arguments",
                                                               "")
            finish = c["finish_reason"] or finish
    return content, [calls[i] for i in sorted(calls)], finish, reasoning


def tools(srv, args):
    with open(args.format, encoding="utf-8") as f:
        fmt = json.load(f)
    chat = "/v1/chat/completions"
    chain = fmt["chains"][0]
    written = "".join(chain[1:-1])  # the reply as the model writes it
    want = [(n, a) for n, a in fmt["calls"]]
    thought = fmt.get("reasoning")  # the reply's reasoning, if it thinks
    messages = [{"role": "user",
                 "content": "What is the weather in Paris, and the time?"}]
    body = {"messages": messages, "tools": TOOLS, "max_tokens": 32}

    def visible(text):
        """A reply's text less its thought: its content as written."""
        if thought is None or "</think>" not in text:
            return text
        return text.split("</think>", 1)[1].lstrip()

    def check_reasoning(got, what):
        if got != thought:
            fail(f"{what}: reasoning {got!r}, expected {thought!r}")

    def check_calls(calls, content, finish, what):
        got = [(c["function"]["name"], c["function"]["arguments"])
               for c in calls]
        want_finish = "tool_calls" if want else "stop"
        if got != want or content != fmt["content"] or finish != want_finish:
            fail(f"{what}: calls {got}, content {content!r}, finish {finish}; "
                 f"expected {want}, {fmt['content']!r}, {want_finish}")
        for c in calls:
            json.loads(c["function"]["arguments"])
            if c["type"] != "function" or \
                    not re.fullmatch(r"[A-Za-z0-9]{9}", c["id"]):
                fail(f"{what}: a call's id or type: {c}")
        if len({c["id"] for c in calls}) != len(calls):
            fail(f"{what}: ids repeat: {calls}")

    whole = srv.post(chat, body)
    msg = whole["choices"][0]["message"]
    if args.expect_content:
        # (A server without parsers.)
        if msg["content"] != written or msg.get("tool_calls") or \
                "reasoning_content" in msg or \
                whole["choices"][0]["finish_reason"] != "stop":
            fail(f"no parser: {whole}")
        print("--tool-call-parser none --reasoning-format none: the reply "
              "as written, finish stop")
        if thought is not None:
            # A request's reasoning_format deepseek parses the thought out
            # all the same.
            b = {"messages": messages, "max_tokens": 32,
                 "reasoning_format": "deepseek"}
            got = srv.post(chat, b)["choices"][0]["message"]
            content, calls, finish, reasoning = stream_calls(
                srv.stream(chat, b))
            if got["content"] != visible(written) or content != \
                    visible(written):
                fail(f"reasoning_format deepseek: {got}; streamed "
                     f"{content!r}")
            check_reasoning(got.get("reasoning_content"),
                            "reasoning_format deepseek")
            check_reasoning(reasoning, "reasoning_format deepseek, streamed")
            print("reasoning_format deepseek: the thought as reasoning, "
                  "whole and streamed")
        return
    check_calls(msg.get("tool_calls", []), msg["content"],
                whole["choices"][0]["finish_reason"], "whole")
    check_reasoning(msg.get("reasoning_content"), "whole")
    print(f"whole: {len(want)} tool calls " +
          ", ".join(f"{n}({a})" for n, a in want) +
          f", content {msg['content']!r}" +
          (f", reasoning {thought!r}" if thought is not None else "") +
          f", finish {whole['choices'][0]['finish_reason']}")

    events = srv.stream(chat, body)
    content, calls, finish, reasoning = stream_calls(events)
    for c in calls:
        c["function"] = {"name": c["name"], "arguments": c["arguments"]}
    check_calls(calls, content or None if fmt["content"] is None else content,
                finish, "streamed")
    check_reasoning(reasoning, "streamed")
    print(f"streamed: the same calls and content in {len(events)} events")

    # The reply as written: tool_choice none, no tools.
    for what, b in (("tool_choice none", dict(body, tool_choice="none")),
                    ("no tools", {"messages": messages, "max_tokens": 32})):
        got = srv.post(chat, b)["choices"][0]
        if got["message"]["content"] != visible(written) or \
                got["message"].get("tool_calls") or \
                got["finish_reason"] != "stop":
            fail(f"{what}: {got}, expected the text {visible(written)!r}")
        check_reasoning(got["message"].get("reasoning_content"), what)
        content, calls, finish, reasoning = stream_calls(srv.stream(chat, b))
        if content != visible(written) or calls or finish != "stop":
            fail(f"{what}, streamed: {content!r} {calls} {finish}")
        check_reasoning(reasoning, what + ", streamed")
    print("tool_choice none, and no tools: the reply as written, whole and "
          "streamed")

    if thought is not None:
        # The request's own reasoning_format over the server's: "none"
        # leaves the thought in the content, as written.
        b = {"messages": messages, "max_tokens": 32, "reasoning_format": "none"}
        got = srv.post(chat, b)["choices"][0]["message"]
        content, calls, finish, reasoning = stream_calls(srv.stream(chat, b))
        if got["content"] != written or "reasoning_content" in got or \
                content != written or reasoning is not None:
            fail(f"reasoning_format none: {got}; streamed {content!r}, "
                 f"{reasoning!r}")
        print("reasoning_format none: the thought left in the content, "
              "whole and streamed")

    if thought is not None:
        # A reply cut inside its thought: all reasoning, no content.
        b = dict(body, max_tokens=chain.index("</think>") - 1)
        got = srv.post(chat, b)["choices"][0]
        content, calls, finish, reasoning = stream_calls(srv.stream(chat, b))
        if got["message"]["content"] != "" or got["finish_reason"] != \
                "length" or content != "" or finish != "length":
            fail(f"cut in the thought: {got}; streamed {content!r}")
        check_reasoning(got["message"].get("reasoning_content"),
                        "cut in the thought")
        check_reasoning(reasoning, "cut in the thought, streamed")
        print("cut inside the thought: all reasoning, no content, whole and "
              "streamed")

    if len(want) > 1:
        got = srv.post(chat, dict(body, parallel_tool_calls=False))
        calls = got["choices"][0]["message"]["tool_calls"]
        if [c["function"]["name"] for c in calls] != [want[0][0]]:
            fail(f"parallel_tool_calls false: {calls}")
        print("parallel_tool_calls false: the first call only")

    # A reply that max_tokens ends (here at its last token, before the stop
    # token: its calls whole, but not ended by the model) is content, as
    # written, whatever it holds.
    cut = visible(written)
    b = dict(body, max_tokens=len(chain) - 2)
    got = srv.post(chat, b)["choices"][0]
    content, calls, finish, reasoning = stream_calls(srv.stream(chat, b))
    if got["message"]["content"] != cut or "tool_calls" in got["message"] \
            or got["finish_reason"] != "length" or content != cut or calls \
            or finish != "length":
        fail(f"cut by max_tokens: {got}; streamed {content!r} {calls}")
    check_reasoning(got["message"].get("reasoning_content"), "cut")
    check_reasoning(reasoning, "cut, streamed")
    print("ended by max_tokens: content as written, finish length")

    if "malformed" in fmt:
        cut = "".join(fmt["chains"][1][1:-1])
        b = dict(body, chat_template_kwargs=fmt["malformed"])
        got = srv.post(chat, b)["choices"][0]
        content, calls, finish, reasoning = stream_calls(srv.stream(chat, b))
        if got["message"]["content"] != cut or "tool_calls" in \
                got["message"] or got["finish_reason"] != "stop" or \
                content != cut or calls or finish != "stop" or \
                "reasoning_content" in got["message"] or reasoning is not None:
            fail(f"a malformed call: {got}; streamed {content!r} {calls}")
        print("a malformed call: content as written, whole and streamed")

    if fmt.get("second_turn"):
        # The calls go back with the tools' answers: the template renders
        # them as jinja2 does. The assistant's content as the response gave
        # it, then null (as an OpenAI client sends a reply without content:
        # a template that refuses null, Qwen 3's, renders "").
        with open(os.path.join(args.model, "tokenizer_config.json"),
                  encoding="utf-8") as f:
            config = json.load(f)
        specials = {}
        for key in ("bos_token", "eos_token"):
            v = config.get(key)
            specials[key] = v["content"] if isinstance(v, dict) else v
        env = check_chat.reference.environment().from_string(
            config["chat_template"])
        for content in dict.fromkeys([msg["content"], None]):
            answers = [{"role": "assistant", "content": content,
                        "tool_calls": msg["tool_calls"]}]
            for c in msg["tool_calls"]:
                answers.append({"role": "tool", "tool_call_id": c["id"],
                                "content": json.dumps({"answer": c[
                                    "function"]["name"]})})
            turn = dict(body, messages=messages + answers, max_tokens=4,
                        temperature=0)
            prompt = logged(args, srv.post(chat, turn), "prompt")
            try:
                rendered = env.render(messages=turn["messages"], tools=TOOLS,
                                      add_generation_prompt=True, **specials)
                how = "as jinja2 renders them"
            except Exception:  # noqa: BLE001 (jinja2 refuses the null)
                answers[0]["content"] = ""
                rendered = env.render(messages=turn["messages"], tools=TOOLS,
                                      add_generation_prompt=True, **specials)
                how = "as jinja2 renders them with \"\" for null"
            if prompt != rendered:
                fail(f"the second turn's prompt is not jinja2's:\n"
                     f"{prompt!r}\n{rendered!r}")
            print(f"second turn, content {json.dumps(content)[:20]}: the "
                  f"calls and {len(msg['tool_calls'])} answers rendered "
                  f"{how}, {len(rendered)} bytes")
    required_calls(srv, fmt, messages)


# Tools whose arguments a grammar bounds (enums, booleans, a const), for
# tool_choice required and named.
PICK_TOOLS = [{"type": "function", "function": {
    "name": "pick", "parameters": {
        "type": "object", "additionalProperties": False,
        "required": ["color", "sure"],
        "properties": {"color": {"enum": ["red", "blue"]},
                       "sure": {"type": "boolean"}}}}},
    {"type": "function", "function": {
        "name": "other", "parameters": {
            "type": "object", "additionalProperties": False,
            "required": ["x"], "properties": {"x": {"const": 1}}}}}]


def required_calls(srv, fmt, messages):
    """tool_choice required and named: the reply, sampled (where the
    steered model's chain leaves the format, the grammar chooses), is one
    call in the model's format, of a tool given, with arguments of its
    schema, no content, and reasoning only where the model thinks (the
    thought the grammar lets it finish first), whole and streamed alike;
    the named tool's where one is named; and the errors. (Without
    parallel_tool_calls: a reply of several calls may run past the
    context, the stop tokens' chance at each call's end being small.
    test/Chat/grammar.test holds each format's grammar of several calls
    to the parser.)"""
    chat = "/v1/chat/completions"

    def valid(c):
        args = json.loads(c["function"]["arguments"])
        if c["function"]["name"] == "pick":
            return set(args) == {"color", "sure"} and \
                args["color"] in ("red", "blue") and \
                isinstance(args["sure"], bool)
        return c["function"]["name"] == "other" and args == {"x": 1}

    thinks = fmt.get("reasoning") is not None
    runs = thoughts = 0
    for seed in range(1, 4):
        for choice in ("required", {"type": "function",
                                    "function": {"name": "other"}}):
            body = {"messages": messages, "tools": PICK_TOOLS,
                    "tool_choice": choice, "parallel_tool_calls": False,
                    "max_tokens": 300, "temperature": 1, "seed": seed}
            got = srv.post(chat, body)["choices"][0]
            calls = got["message"].get("tool_calls") or []
            thought = got["message"].get("reasoning_content") or ""
            if got["finish_reason"] != "tool_calls" or len(calls) != 1 or \
                    not valid(calls[0]) or \
                    got["message"]["content"] is not None or \
                    (thought and not thinks) or \
                    (choice != "required" and
                     calls[0]["function"]["name"] != "other"):
                fail(f"tool_choice {choice}, seed {seed}: {got}")
            if seed == 1:
                content, streamed, finish, reasoning = stream_calls(
                    srv.stream(chat, body))
                if content or (reasoning or "") != thought or \
                        finish != "tool_calls" or \
                        [(c["name"], c["arguments"]) for c in streamed] != \
                        [(c["function"]["name"], c["function"]["arguments"])
                         for c in calls]:
                    fail(f"tool_choice {choice}, streamed: {content!r} "
                         f"{streamed} {finish} {reasoning!r}, whole {calls}")
            runs += 1
            thoughts += bool(thought)
    if thinks and "malformed" in fmt:
        # (A prompt that closed its thought (enable_thinking false): the
        # call at once, no thought offered: the server's --verbose-prompt
        # log names the grammar's start, serve-tools.test.)
        body = {"messages": messages, "tools": PICK_TOOLS,
                "tool_choice": "required", "parallel_tool_calls": False,
                "max_tokens": 300, "temperature": 1, "seed": 1,
                "chat_template_kwargs": fmt["malformed"]}
        got = srv.post(chat, body)["choices"][0]
        if got["finish_reason"] != "tool_calls" or \
                got["message"].get("reasoning_content"):
            fail(f"tool_choice required after a closed thought: {got}")
    base = {"messages": messages, "tools": PICK_TOOLS, "max_tokens": 8}
    errors = [
            (dict(base, tool_choice={"type": "function",
                                     "function": {"name": "nope"}}),
             "'tool_choice' asks for a call: 'nope' is not among 'tools'"),
            ({"messages": messages, "tool_choice": "required"},
             "'tool_choice' asks for a call, but 'tools' holds none"),
            (dict(base, tool_choice="required", grammar='root ::= "a"'),
             "'tool_choice' asks for a call, and 'grammar' constrains the "
             "reply: give one"),
            (dict(base, tool_choice="any"), "'tool_choice' must be"),
            (dict(base, tool_choice={"type": "function",
                                     "function": {"name": ""}}),
             "'tool_choice' names no function")] + (
            # (DeepSeek writes a name as plain text.)
            [(dict(base, tool_choice="required", tools=[
                {"type": "function", "function": {"name": "a b"}}]),
              "'tools' [0]'s name 'a b' holds space or control characters, "
              "or is over 256 bytes: deepseek calls cannot write it")]
            if "\u2581calls\u2581begin" in "".join(fmt["chains"][0]) else [])
    for body, needle in errors:
        st, _, data = srv.request("POST", chat, body)
        if st != 400 or needle not in json.loads(data)["error"]["message"]:
            fail(f"{body}: {st} {data[:300]!r}, expected 400 {needle!r}")
    print(f"tool_choice required and named: {runs} sampled replies, each "
          f"a call of the tools with arguments of their schemas, no "
          f"content, streamed alike" +
          (f", {thoughts} after a thought" if thinks else "") +
          f"; {len(errors)} errors")


REFERENCE_LOGPROBS = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import archref
spec = archref.Spec(sys.argv[2])
w = archref.random_weights(spec, int(sys.argv[3]))
ids = json.loads(sys.argv[4])
with torch.no_grad():
    lp = torch.log_softmax(archref.forward(spec, w, ids), -1)
print(json.dumps(lp.tolist()))
"""


REFERENCE_GREEDY = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import archref
spec = archref.Spec(sys.argv[2])
w = archref.random_weights(spec, int(sys.argv[3]))
prompt, n, runs = json.loads(sys.argv[4]), int(sys.argv[5]), json.loads(sys.argv[6])
out = []
with torch.no_grad():
    for p in runs:
        ids, counts = list(prompt), {}
        for _ in range(n):
            l = archref.forward(spec, w, ids)[-1].clone()
            for t, b in p.get("logit_bias", {}).items():
                l[int(t)] += b
            rp = p.get("repeat_penalty", p.get("repetition_penalty", 1.0))
            for t in set(ids):
                l[t] = l[t] / rp if l[t] > 0 else l[t] * rp
            for t, c in counts.items():
                l[t] -= p.get("frequency_penalty", 0) * c + \\
                    p.get("presence_penalty", 0)
            nxt = int(l.argmax())
            if nxt in (0, 1, 2):  # the tokenizer's special (stop) tokens
                break
            ids.append(nxt)
            counts[nxt] = counts.get(nxt, 0) + 1
        out.append(ids[len(prompt):])
print(json.dumps(out))
"""


def reference(args, script, *argv):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return json.loads(subprocess.run(
        [sys.executable, "-c", script,
         os.path.join(HERE, "..", "reference"), args.spec, str(args.seed),
         *argv], env=env, check=True, capture_output=True, text=True).stdout)


def logged(args, got, key):
    """A completion's `key` ("prompt", "reply": its token ids) in the
    server's --verbose-prompt log, once the log holds it."""
    n = int(got["id"].rsplit("-", 1)[1])
    for _ in range(100):
        value = check_chat.parse_log(args.log).get(n, {}).get(key)
        if value is not None:
            return value
        time.sleep(0.1)
    fail(f"completion {n}: no {key} in the log")


def reply_ids(srv, args, got):
    """The token ids of a completion."""
    return logged(args, got, "reply")


def logits(srv, args):
    """Each generated token's logprob and the top alternatives', against
    the PyTorch reference's log-softmax of the same sequence (float64), to
    TOL; a chat's, whole and streamed alike; the logits' shaping (penalties,
    logit_bias) against the reference's greedy tokens shaped alike, and
    top_k 1 and min_p 1 as greedy while sampling; and the errors."""
    tol = 1e-4
    prompt = [1, 450, 1642, 338]
    got = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": 5,
                                       "temperature": 0, "logprobs": 3})
    lp = got["choices"][0]["logprobs"]
    reply = reply_ids(srv, args, got)
    ref = reference(args, REFERENCE_LOGPROBS, json.dumps(prompt + reply))
    worst = 0.0
    for j, token in enumerate(reply):
        row = ref[len(prompt) - 1 + j]
        top = sorted(row, reverse=True)[:3]
        mine = sorted(lp["top_logprobs"][j].values(), reverse=True)
        errs = [abs(lp["token_logprobs"][j] - row[token])] + \
            [abs(a - b) for a, b in zip(mine, top)]
        worst = max(worst, *errs)
        if len(mine) != 3 or max(errs) > tol or \
                lp["tokens"][j] not in lp["top_logprobs"][j]:
            fail(f"token {j}: {lp['token_logprobs'][j]} {mine}, reference "
                 f"{row[token]} {top}")
    if "".join(lp["tokens"]) != got["choices"][0]["text"] or any(
            lp["text_offset"][j] != len("".join(lp["tokens"][:j]))
            for j in range(len(reply))):
        fail(f"tokens {lp['tokens']}, offsets {lp['text_offset']} against "
             f"{got['choices'][0]['text']!r}")
    print(f"completions: {len(reply)} tokens' logprobs and top 3 as the "
          f"reference's within {tol} (worst {worst:.1e})")

    def same(a, b):
        """Two lists of logprobs entries alike: the tokens exactly, the
        numbers to 1e-6 (a stream's prefill may take another path)."""
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(map(same, a, b))
        if isinstance(a, float) or isinstance(b, float):
            return abs(a - b) <= 1e-6
        return a == b

    # Sampled, a completion's top lists hold the sampled token too (up to
    # logprobs + 1), and its stream's pieces make the whole's.
    for k in (0, 1):
        body = {"prompt": prompt, "max_tokens": 6, "temperature": 1.0,
                "seed": 11, "logprobs": k}
        whole = srv.post("/v1/completions", body)["choices"][0]["logprobs"]
        pieces = {"tokens": [], "token_logprobs": [], "top_logprobs": [],
                  "text_offset": []}
        for e in srv.stream("/v1/completions", body):
            for c in e["choices"]:
                for key in pieces:
                    pieces[key] += (c["logprobs"] or {}).get(key, [])
        if not same(pieces, whole) or any(
                t not in top or len(top) > k + 1
                for t, top in zip(whole["tokens"], whole["top_logprobs"])):
            fail(f"completions sampled, logprobs {k}: {whole}; streamed "
                 f"{pieces}")
    print("completions sampled: each top list holds the sampled token, "
          "whole and streamed alike")

    chat = "/v1/chat/completions"
    for top, stop in ((0, None), (2, None), (1, "x")):
        body = {"messages": [{"role": "user", "content": "Hello there"}],
                "temperature": 0, "max_tokens": 6, "logprobs": True,
                "top_logprobs": top}
        if stop is not None:
            # (A stop string inside the third token's text: the entries
            # stop with that token.)
            whole = srv.post(chat, body)["choices"][0]
            third = whole["logprobs"]["content"][2]["token"]
            body["stop"] = stop = third[len(third) // 2:]
        got = srv.post(chat, body)
        whole = got["choices"][0]
        entries = whole["logprobs"]["content"]
        streamed = []
        for e in srv.stream(chat, body):
            for c in e["choices"]:
                streamed += (c.get("logprobs") or {}).get("content", [])
        text = whole["message"]["content"].encode()
        joined = b"".join(bytes(e["bytes"]) for e in entries)
        if not same(streamed, entries) or any(
                len(e["top_logprobs"]) != top for e in entries) or \
                len(entries) != got["usage"]["completion_tokens"] or \
                (joined != text if stop is None else
                 not joined.startswith(text) or len(entries) != 3):
            fail(f"chat logprobs, top {top}, stop {stop!r}: {entries} "
                 f"streamed {streamed}")
    print("chat: logprobs with 0 and 2 alternatives and with a stop string, "
          "whole and streamed alike, an entry a generated token")

    # The logits' shaping: the server's greedy tokens against the
    # reference's, shaped alike.
    n = 8
    plain = {"prompt": prompt, "max_tokens": n, "temperature": 0}
    greedy = reply_ids(srv, args, srv.post("/v1/completions", plain))
    # (Each run but the first must differ from the run it names: a bias
    # that makes token 450 repeat, then each penalty alone stopping its
    # repeats (450 is in the prompt: the repetition penalty's only, and
    # the bias comes first); the greedy first token biased away.)
    bias = {"logit_bias": {"450": 5}}
    runs = [({}, None), (bias, 0),
            (dict(bias, presence_penalty=2), 1),
            (dict(bias, frequency_penalty=1), 1),
            (dict(bias, repeat_penalty=2), 1),
            ({"logit_bias": {str(greedy[0]): -100, "450": -2.5}}, 0)]
    want = reference(args, REFERENCE_GREEDY, json.dumps(prompt), str(n),
                     json.dumps([p for p, _ in runs]))
    for (params, unlike), expected in zip(runs, want):
        got = reply_ids(srv, args, srv.post("/v1/completions",
                                            dict(plain, **params)))
        if got != expected or (unlike is not None and got == want[unlike]):
            fail(f"{params}: {got}, the reference's {expected}, run "
                 f"{unlike}'s {want[unlike] if unlike is not None else ''}")
    print(f"shaping: {n} greedy tokens as the reference's, plain, with a "
          f"logit_bias, with each penalty over it, and the first token "
          f"biased away (each unlike the run it changes)")
    # Sampled with top_k 3, each token is among the 3 most likely; with
    # min_p 0.3 at temperature 0.7, each is at least 0.3 times as likely
    # as the most likely at that temperature (the raw logprobs tell); the
    # same samples unshaped are not.
    for params, k in (({"top_k": 3}, 3), ({"min_p": 0.3}, 1)):
        t = 0.7 if "min_p" in params else 1.5
        body = dict(plain, temperature=t, seed=21, logprobs=k)

        def kept(lp, j):
            top = lp["top_logprobs"][j]
            if "top_k" in params:
                return lp["tokens"][j] in sorted(
                    top, key=top.get, reverse=True)[:3]
            return lp["token_logprobs"][j] >= max(top.values()) + \
                t * math.log(0.3) - 1e-6
        shaped = srv.post("/v1/completions", dict(body, **params))[
            "choices"][0]["logprobs"]
        loose = srv.post("/v1/completions", body)["choices"][0]["logprobs"]
        if not all(kept(shaped, j) for j in range(len(shaped["tokens"]))) \
                or all(kept(loose, j) for j in range(len(loose["tokens"]))):
            fail(f"{params} at temperature {t}: {shaped}; unshaped {loose}")
    print("sampled: top_k 3 keeps the 3 most likely, min_p 0.3 at "
          "temperature 0.7 those at least 0.3 times the most likely's "
          "probability (unshaped samples do not)")
    # top_k 1 and min_p 1 leave the most likely token only, whatever the
    # temperature.
    for params in ({"top_k": 1, "temperature": 1.0, "seed": 3},
                   {"min_p": 1.0, "temperature": 1.5, "seed": 4}):
        got = reply_ids(srv, args, srv.post("/v1/completions",
                                            dict(plain, **params)))
        loose = reply_ids(srv, args, srv.post("/v1/completions", dict(
            plain, temperature=params["temperature"], seed=params["seed"])))
        if got != greedy or loose == greedy:
            fail(f"{params}: {got}, greedy {greedy}; unshaped {loose}")
    print("top_k 1 and min_p 1 sample the greedy tokens (unshaped samples "
          "do not)")

    base = {"messages": [{"role": "user", "content": "x"}]}
    expect_error(srv, chat, dict(base, repetition_penalty=0), 400,
                 "'repetition_penalty' must be a number in (0, 2]")
    expect_error(srv, chat, dict(base, top_k=-2), 400,
                 "'top_k' must be an integer in [-1, 2147483647]")
    expect_error(srv, chat, dict(base, logit_bias={"abc": 1}), 400,
                 "'logit_bias' 'abc' is not a token id")
    expect_error(srv, chat, dict(base, logit_bias={"05": 1}), 400,
                 "'logit_bias' '05' is not a token id")
    expect_error(srv, chat, dict(base, logit_bias={"5": 101}), 400,
                 "'logit_bias' '5' must be a number in [-100, 100]")
    expect_error(srv, chat, dict(base, logit_bias={"40000": 1}), 400,
                 "'logit_bias': token 40000 is outside the vocabulary "
                 "[0, 32000)")
    expect_error(srv, chat, dict(base, top_logprobs=2), 400,
                 "'top_logprobs' needs 'logprobs' true")
    expect_error(srv, chat, dict(base, logprobs=True, top_logprobs=21), 400,
                 "'top_logprobs' must be an integer in [0, 20]")
    expect_error(srv, "/v1/completions", {"prompt": "x", "logprobs": 21}, 400,
                 "'logprobs' must be an integer in [0, 20]")


REFERENCE_CONSTRAINED = """
import itertools, json, re, sys, torch
sys.path.insert(0, sys.argv[1])
import archref
spec = archref.Spec(sys.argv[2])
w = archref.random_weights(spec, int(sys.argv[3]))
prompts, n = json.loads(sys.argv[4]), int(sys.argv[5])
# The grammar's sentences: a list of them, or {"class": C}, any text of
# C's bytes.
allowed = json.loads(sys.argv[6])
vocab = json.load(open(sys.argv[7]))["model"]["vocab"]
first = len(sys.argv) > 8 and sys.argv[8] == "first"
# logit_bias, where given: {id: bias} added to the logits.
bias = {int(k): v for k, v in json.loads(sys.argv[9]).items()} \\
    if len(sys.argv) > 9 else {}
# Each token's bytes within a text: the pieces of the Llama 2
# tokenizer.json, byte tokens as their byte; ids 0-2 end a reply.
piece = {}
for text, i in vocab.items():
    m = re.fullmatch(r"<0x([0-9A-F]{2})>", text)
    piece[i] = bytes([int(m.group(1), 16)]) if m else \\
        text.replace("\u2581", " ").encode()
if isinstance(allowed, dict):
    chars = set(allowed["class"].encode())
    def takes(text, t):
        return t in (0, 1, 2) or bool(piece.get(t)) and set(piece[t]) <= chars
else:
    language = [x.encode() for x in allowed]
    def takes(text, t):
        return text in language if t in (0, 1, 2) else \\
            bool(piece.get(t)) and any(s.startswith(text + piece[t])
                                       for s in language)
out = []
with torch.no_grad():
    for prompt in prompts:
        ids, text = list(prompt), b""
        if first:
            # The first token's distribution at temperature 1 under the
            # grammar (float64), and the mass the grammar allows of the
            # model's own.
            # Summed by the token's first byte: a space, a-h, i-p, q-z;
            # "" for a stop token.
            p = torch.softmax(archref.forward(spec, w, ids)[-1].double(), 0)
            keep = [t for t in range(len(p)) if takes(text, t)]
            mass = float(p[keep].sum())
            bins = {}
            for t in keep:
                b = "" if t in (0, 1, 2) else \\
                    next(k for k in ("q", "i", "a", " ") if
                         chr(piece[t][0]) >= k)
                bins[b] = bins.get(b, 0.0) + float(p[t]) / mass
            out.append({"mass": mass, "bins": bins})
            continue
        for _ in range(n):
            logits = archref.forward(spec, w, ids)[-1].clone()
            for t, b in bias.items():
                logits[t] += b
            order = torch.argsort(logits, descending=True).tolist()
            # The most likely token the grammar allows next.
            nxt = next(t for t in order if takes(text, t))
            if nxt in (0, 1, 2):
                break
            ids.append(nxt)
            text += piece[nxt]
        out.append(ids[len(prompt):])
print(json.dumps(out))
"""


def sampled_first(srv, args, prompts, n):
    """A grammar that takes many of the tokens (any text of [a-z ]): each
    token is sampled from the model's logits first and stands where the
    grammar takes it, the mask made only for one it refuses. Greedy
    replies as the reference's most likely allowed tokens, with fewer
    masks than tokens; at temperature 1, the first token's distribution
    (summed by its first byte) as the reference's under the mask, by a
    chi-square test over 400 seeds; where top_k cuts the distribution, a
    mask for every token."""
    cls = "abcdefghijklmnopqrstuvwxyz "
    gbnf = "root ::= [a-z ]*\n"
    tok = os.path.join(args.tokenizer, "tokenizer.json")
    want = reference(args, REFERENCE_CONSTRAINED, json.dumps(prompts),
                     str(n), json.dumps({"class": cls}), tok)
    masks = tokens = 0
    for prompt, expected in zip(prompts, want):
        got = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": n,
                                           "temperature": 0,
                                           "grammar": gbnf})
        ids = reply_ids(srv, args, got)
        k, m = logged(args, got, "masks")
        masks, tokens = masks + k, tokens + m
        if ids != expected or set(got["choices"][0]["text"]) - set(cls):
            fail(f"[a-z ]*, prompt {prompt}: {ids} "
                 f"{got['choices'][0]['text']!r}, the reference's {expected}")
    if masks >= tokens:
        fail(f"[a-z ]*: greedy replies masked at {masks} of {tokens} tokens")
    # logit_bias raising a token the grammar refuses (" The") above all and
    # lowering the allowed one the reference picks first: the token is
    # sampled again from the biased logits under the mask (the model's own
    # would give the lowered one).
    with open(tok, encoding="utf-8") as f:
        the = json.load(f)["model"]["vocab"]["\u2581The"]
    bias = {the: 100, want[0][0]: -100}
    biased = reference(args, REFERENCE_CONSTRAINED, json.dumps(prompts[:1]),
                       "4", json.dumps({"class": cls}), tok, "greedy",
                       json.dumps(bias))[0]
    got = srv.post("/v1/completions", {"prompt": prompts[0], "max_tokens": 4,
                                       "temperature": 0, "grammar": gbnf,
                                       "logit_bias": bias})
    ids = reply_ids(srv, args, got)
    k, m = logged(args, got, "masks")
    if ids != biased or k != m or biased[0] == want[0][0]:
        fail(f"[a-z ]* with logit_bias {bias}: {ids}, the reference's "
             f"{biased}; masked at {k} of {m} tokens")
    print(f"[a-z ]*: {len(prompts)} greedy replies as the reference's, "
          "masked at fewer tokens than they have; with logit_bias raising a "
          "refused token, as the reference's biased and masked")

    prompt, seeds = prompts[0], 400
    ref = reference(args, REFERENCE_CONSTRAINED, json.dumps([prompt]), "1",
                    json.dumps({"class": cls}), tok, "first")[0]
    counts = {b: 0 for b in ref["bins"]}
    masks = 0
    for seed in range(1, seeds + 1):
        got = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": 1,
                                           "temperature": 1, "seed": seed,
                                           "grammar": gbnf})
        text = got["choices"][0]["text"]
        b = "" if not text else next(k for k in ("q", "i", "a", " ")
                                     if text[0] >= k)
        if b not in counts or set(text) - set(cls):
            fail(f"seed {seed}: {text!r} outside the grammar")
        counts[b] += 1
        masks += logged(args, got, "masks")[0]
    # (Bins the reference gives under 5 expected draws go with the next.)
    chi2, df, carry = 0.0, -1, [0.0, 0]
    for b in sorted(counts):
        carry = [carry[0] + ref["bins"][b] * seeds, carry[1] + counts[b]]
        if carry[0] >= 5 or b == sorted(counts)[-1]:
            chi2 += (carry[1] - carry[0]) ** 2 / carry[0]
            df, carry = df + 1, [0.0, 0]
    # (The 0.1% point of chi-square for 1 to 4 degrees of freedom.)
    limit = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47}.get(df)
    if limit is None:
        fail(f"first tokens: {df} degrees of freedom in {ref['bins']}")
    if chi2 > limit or not 0 < masks < seeds:
        fail(f"first tokens {counts} against the reference's "
             f"{ref['bins']} (chi-square {chi2:.2f} > {limit} at {df} "
             f"degrees of freedom?), masked in {masks} of {seeds}")
    print(f"[a-z ]*: {seeds} first tokens sampled at temperature 1 as the "
          f"reference's distribution under the grammar (chi-square within "
          f"its 0.1% point), some masked, not all")
    for cut in ({"top_k": 40}, {"top_p": 0.9}, {"min_p": 0.01}):
        got = srv.post("/v1/completions", dict(
            {"prompt": prompt, "max_tokens": n, "temperature": 1, "seed": 1,
             "grammar": gbnf}, **cut))
        k, m = logged(args, got, "masks")
        if k != m or set(got["choices"][0]["text"]) - set(cls):
            fail(f"{cut}: masked at {k} of {m} tokens, "
                 f"{got['choices'][0]['text']!r}")
    print("[a-z ]* with top_k, top_p or min_p: masked at every token")


def grammar(srv, args):
    """Replies constrained by a grammar: a finite language's greedy tokens
    against the PyTorch reference's (its most likely token among those
    whose text keeps the reply a prefix of a sentence, the language's
    sentences listed in Python); JSON schema replies, sampled, that
    json.loads reads and that keep to the schema (properties in its
    order), whole and streamed alike; json_object; and the errors."""
    import itertools
    words = [("The", "A"), (" cat", " dog", " bird"), (" sat", " ran"),
             ("", ".")]
    language = ["".join(p) for p in itertools.product(*words)]
    gbnf = ('root ::= ("The" | "A") " " animal " " ("sat" | "ran") "."?\n'
            'animal ::= "cat" | "dog" | "bird"\n')
    prompts = [[1, 450, 1642, 338], [1, 319, 29871], [1, 29871, 13]]
    n = 12
    want = reference(args, REFERENCE_CONSTRAINED, json.dumps(prompts),
                     str(n), json.dumps(language),
                     os.path.join(args.tokenizer, "tokenizer.json"))
    for prompt, expected in zip(prompts, want):
        got = srv.post("/v1/completions", {"prompt": prompt, "max_tokens": n,
                                           "temperature": 0,
                                           "grammar": gbnf})
        ids = reply_ids(srv, args, got)
        text = got["choices"][0]["text"]
        if ids != expected or text not in language or \
                got["choices"][0]["finish_reason"] != "stop":
            fail(f"grammar, prompt {prompt}: {ids} {text!r}, the "
                 f"reference's {expected}")
    print(f"grammar: {len(prompts)} replies' greedy tokens as the "
          f"reference's within the language of {len(language)} sentences")
    sampled_first(srv, args, prompts, n)
    # archc run --grammar: the text the server gives the same prompt (its
    # stdout echoes the prompt first); --chat --json-schema: JSON of the
    # schema.
    tok = os.path.join(args.tokenizer, "tokenizer.json")
    run = ["archc", "run", args.lib, "--weights", args.weights,
           "--tokenizer", tok, "--temperature", "0", "--quiet"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "g.gbnf")
        with open(path, "w") as f:
            f.write(gbnf)
        out = subprocess.run(run + ["--prompt", "Once", "-n", str(n),
                                    "--grammar", path], capture_output=True,
                             check=True).stdout.decode()
        got = srv.post("/v1/completions", {"prompt": "Once", "max_tokens": n,
                                           "temperature": 0,
                                           "grammar": gbnf})
        if out != "Once" + got["choices"][0]["text"] + "\n" or \
                out[len("Once"):-1] not in language:
            fail(f"archc run --grammar: {out!r}, served "
                 f"{got['choices'][0]['text']!r}")
        path = os.path.join(tmp, "s.json")
        with open(path, "w") as f:
            json.dump({"type": "object", "required": ["ok"],
                       "additionalProperties": False,
                       "properties": {"ok": {"type": "boolean"}}}, f)
        # (64 tokens: the longest reply the schema allows is 44 bytes.)
        out = subprocess.run(run + ["--chat", "--prompt", "Hi", "-n", "64",
                                    "--json-schema", path],
                             stdin=subprocess.DEVNULL, capture_output=True,
                             check=True).stdout.decode()
        try:
            ok = json.loads(out).get("ok")
        except ValueError:
            ok = None
        if not isinstance(ok, bool):
            fail(f"archc run --chat --json-schema: {out!r}")
    print("archc run --grammar: the server's text; --chat --json-schema: "
          "JSON of the schema")

    chat = "/v1/chat/completions"
    schema = {"type": "object", "additionalProperties": False,
              "required": ["ok", "color", "n", "code"],
              "properties": {"ok": {"type": "boolean"},
                             "color": {"enum": ["red", "green", "blue"]},
                             "n": {"type": "integer", "minimum": -3,
                                   "exclusiveMaximum": 120},
                             "code": {"type": "string",
                                      "pattern": "^[A-Z]{2}-\\d{1,3}$"},
                             "tags": {"type": "array", "maxItems": 2,
                                      "items": {"enum": ["x", "y"]}}}}
    keys = list(schema["properties"])
    for seed in range(1, 6):
        body = {"messages": [{"role": "user", "content": "Describe it."}],
                "max_tokens": 200, "temperature": 1, "seed": seed,
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "thing", "strict": True, "schema": schema}}}
        whole = srv.post(chat, body)["choices"][0]
        content = whole["message"]["content"]
        streamed = stream_text(srv.stream(chat, body), True)[0]
        try:
            value = json.loads(content)
        except ValueError:
            fail(f"seed {seed}: not JSON: {content!r}")
        order = [k for k in keys if k in value]
        if whole["finish_reason"] != "stop" or streamed != content or \
                list(value) != order or \
                not {"ok", "color", "n", "code"} <= set(value) <= set(keys) or \
                not re.fullmatch(r"[A-Z]{2}-[0-9]{1,3}", value["code"]) or \
                not isinstance(value["ok"], bool) or \
                value["color"] not in ("red", "green", "blue") or \
                type(value["n"]) is not int or not -3 <= value["n"] < 120 or \
                not all(t in ("x", "y") for t in value.get("tags", [])) or \
                len(value.get("tags", [])) > 2:
            fail(f"seed {seed}: {content!r} (streamed {streamed!r}), "
                 f"finish {whole['finish_reason']}")
    print("json_schema: 5 sampled replies of the schema, properties in its "
          "order, an integer within its bounds, a string of its pattern, "
          "whole and streamed alike")
    got = srv.post(chat, {"messages": [{"role": "user", "content": "Hi"}],
                          "max_tokens": 40, "temperature": 0,
                          "response_format": {"type": "json_object"}})
    value = json.loads(got["choices"][0]["message"]["content"])
    if not isinstance(value, dict):
        fail(f"json_object: {value!r}")
    got = srv.post("/v1/completions", {"prompt": "x", "max_tokens": 30,
                                       "temperature": 0.8, "seed": 3,
                                       "json_schema": {"type": "integer"}})
    int(got["choices"][0]["text"])
    print("json_object: a JSON object; json_schema (llama-server's): an "
          "integer")

    for body, needle in [
            ({"grammar": 'root ::= "a" b'},
             "'grammar' at line 1, column 14: rule 'b' is not defined"),
            ({"grammar": 5}, "'grammar' must be a GBNF grammar's text"),
            ({"grammar": 'root ::= "a"', "json_schema": {}},
             "'json_schema' and 'grammar' both constrain the reply"),
            ({"response_format": {"type": "json_schema", "json_schema": {
                "schema": {"type": "integer", "multipleOf": 3}}}},
             "'response_format' at the schema's root: 'multipleOf' is not "
             "supported"),
            ({"response_format": {"type": "json_schema"}},
             "'response_format' json_schema must be an object with a "
             "'schema'"),
            ({"response_format": {"type": "xml"}},
             "'response_format' must be {\"type\": \"text\"}"),
            ({"json_schema": {"$ref": "#/x"}},
             "'json_schema' at the schema's root: '$ref' #/x points at "
             "nothing"),
            # (Empty rules that double the parses at each of 40 levels.)
            ({"grammar": 'root ::= r0 "x"\ne1 ::= ""\ne2 ::= ""\n'
                         'r40 ::= ""\n' + "".join(
                             f"r{k} ::= r{k + 1} e1 | r{k + 1} e2\n"
                             for k in range(40))},
             "'grammar' is too ambiguous: its start opens more than 4096 "
             "parses")]:
        expect_error(srv, "/v1/completions", dict(body, prompt="x"), 400,
                     needle)
    # A grammar no token of the vocabulary can go on in (0x00's byte token
    # has no text): the generation's error.
    expect_error(srv, "/v1/completions",
                 {"prompt": "x", "grammar": 'root ::= "\\x00"'}, 400,
                 "the grammar allows no token of the vocabulary after the "
                 "reply's 0 bytes")


def nochat(srv, args):
    expect_error(srv, "/v1/chat/completions",
                 {"messages": [{"role": "user", "content": "x"}]}, 400,
                 "no chat template")
    got = srv.post("/v1/completions", {"prompt": "Hi", "max_tokens": 2,
                                       "temperature": 0})
    print(f"completions without a template: "
          f"{got['usage']['completion_tokens']} tokens")


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: check_serve.py MODE --log ERR [options] -- archc serve")
    cut = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["conversation", "protocol", "nochat",
                                     "eos", "tools", "logits", "grammar"])
    ap.add_argument("--spec")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--format")
    ap.add_argument("--expect-content", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--ids")
    ap.add_argument("--log", required=True)
    ap.add_argument("--users")
    ap.add_argument("-n", type=int)
    ap.add_argument("--lib")
    ap.add_argument("--weights")
    ap.add_argument("--tokenizer")
    args = ap.parse_args(argv[:cut])
    srv = Server(argv[cut + 1:], args.log)
    try:
        srv.healthy()
        {"conversation": conversation, "protocol": protocol,
         "nochat": nochat, "eos": eos, "tools": tools,
         "logits": logits, "grammar": grammar}[args.mode](srv, args)
        # A request being read when SIGTERM comes is answered 503 (the
        # interim response says the server is reading it).
        pending = socket.create_connection(("127.0.0.1", srv.port),
                                           timeout=60)
        pending.sendall(b"POST /tokenize HTTP/1.1\r\nContent-Length: 10"
                        b"\r\nExpect: 100-continue\r\n\r\n")
        if pending.recv(100) != b"HTTP/1.1 100 Continue\r\n\r\n":
            fail("no 100 Continue")
    except BaseException:
        srv.proc.kill()
        raise
    srv.stop(pending)


if __name__ == "__main__":
    main()
