//===- Serve.cpp - archc serve: an OpenAI-style HTTP server ----------------===//
#include "Serve.h"

#include "Chat.h"
#include "Grammar.h"
#include "ModelLib.h"
#include "ServeProtocol.h"
#include "Tool.h"
#include "compiler/chat/ChatTemplate.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <poll.h>
#include <random>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace arch {

using namespace serve;

namespace {

/// Set by SIGINT and SIGTERM; read by every connection's thread.
std::atomic<bool> stopping{false};
static_assert(std::atomic<bool>::is_always_lock_free,
              "a signal handler sets it");
extern "C" void onStopSignal(int) { stopping = true; }

/// Connections read and answered at once; one more is answered 503.
constexpr int kMaxConnections = 32;

using Clock = std::chrono::steady_clock;

/// Milliseconds from now to `t` (negative past it).
long msUntil(Clock::time_point t) {
  return long(std::chrono::duration_cast<std::chrono::milliseconds>(
                  t - Clock::now())
                  .count());
}

/// One client's connection: one request read within a deadline, its
/// response written; closed after it (Connection: close).
class Connection {
public:
  Connection(int fd, int timeoutSeconds)
      : fd(fd), deadline(Clock::now() + std::chrono::seconds(timeoutSeconds)),
        sendBudget(timeoutSeconds) {
    // (A streamed token goes out at once, not after the last one's ACK.)
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  /// Closed after the response is sent and what the client still sends
  /// is read (up to 1 s and 1 MiB): closing with unread bytes would reset
  /// the connection before the client has read the response.
  ~Connection() {
    shutdown(fd, SHUT_WR);
    auto until = Clock::now() + std::chrono::seconds(1);
    char chunk[65536];
    for (size_t total = 0; total < (size_t(1) << 20);) {
      long left = msUntil(until);
      pollfd p{fd, POLLIN, 0};
      if (left <= 0 || poll(&p, 1, int(left)) <= 0)
        break;
      ssize_t n = recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0)
        break;
      total += size_t(n);
    }
    close(fd);
  }

  /// Reads a request. 0; -1 where the client left before a whole head (no
  /// answer); or the status to answer with `error`.
  int read(HttpHead &head, std::string &body, std::string &error) {
    size_t end, skip;
    for (;;) {
      size_t crlf = buf.find("\r\n\r\n"), lf = buf.find("\n\n");
      end = std::min(crlf, lf);
      skip = end == crlf ? 4 : 2;
      if (end != std::string::npos)
        break;
      if (buf.size() > kMaxHeadBytes) {
        error = "the request's head passes " + std::to_string(kMaxHeadBytes) +
                " bytes";
        return 431;
      }
      int got = receive(error);
      if (got <= 0)
        return got == 0 ? -1 : got == -2 ? 503 : 408;
    }
    if (end > kMaxHeadBytes) {
      error = "the request's head passes " + std::to_string(kMaxHeadBytes) +
              " bytes";
      return 431;
    }
    if (int status = parseHead(buf.substr(0, end), head, error))
      return status;
    body = buf.substr(end + skip);
    if (head.expectContinue && body.size() < head.contentLength &&
        !send("HTTP/1.1 100 Continue\r\n\r\n"))
      return -1;
    buf.clear();
    while (body.size() < head.contentLength) {
      int got = receive(error);
      if (got <= 0) {
        if (got < 0)
          return got == -2 ? 503 : 408;
        error = "the body ended after " + std::to_string(body.size()) +
                " of its " + std::to_string(head.contentLength) + " bytes";
        return 400;
      }
      body += buf;
      buf.clear();
    }
    body.resize(head.contentLength);
    return 0;
  }

  /// Writes `data` whole; false (and broken) where the client is gone,
  /// the server is stopping, or the time spent waiting for the client to
  /// take what is written passes the timeout, over the whole response (a
  /// client that reads a little at a time cannot hold the server longer).
  bool send(const std::string &data) {
    for (size_t done = 0; !broken && done < data.size();) {
      ssize_t n = ::send(fd, data.data() + done, data.size() - done,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        done += size_t(n);
        started = true;
        continue;
      }
      if (n < 0 && errno == EINTR && !stopping)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !stopping &&
          sendBudget.count() > 0) {
        auto t0 = Clock::now();
        pollfd p{fd, POLLOUT, 0};
        long ms = long(std::min(sendBudget.count() * 1e3, 250.0)) + 1;
        poll(&p, 1, int(ms));
        sendBudget -= Clock::now() - t0;
        continue;
      }
      broken = true;
    }
    return !broken;
  }

  /// Whether the client has closed its side (or the connection failed):
  /// a whole response's generation for it stops. (A client that
  /// half-closes after its request is taken as gone, as llama-server
  /// takes it; a stream finds a client gone by its writes failing.)
  bool gone() {
    if (broken)
      return true;
    pollfd p{fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
      broken = true;
    return broken;
  }

  bool respond(int status, const std::string &body,
               const std::string &extraHeaders = "") {
    return send("HTTP/1.1 " + std::to_string(status) + " " +
                statusText(status) +
                "\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n" + extraHeaders +
                "Connection: close\r\n\r\n" + body);
  }

  bool broken = false;
  bool started = false; ///< some of a response is written

private:
  int fd;
  Clock::time_point deadline;
  std::chrono::duration<double> sendBudget;
  std::string buf;

  /// Appends what arrives to buf: its byte count, 0 at the end of the
  /// stream, -1 past the deadline, -2 where the server is stopping (with
  /// `error`).
  int receive(std::string &error) {
    for (;;) {
      long left = msUntil(deadline);
      pollfd p{fd, POLLIN, 0};
      int ready = left > 0 ? poll(&p, 1, int(std::min<long>(left, 250))) : 0;
      if (stopping) {
        error = "the server is stopping";
        return -2;
      }
      if (ready == 0 && left <= 250) {
        error = "the request did not arrive in time";
        return -1;
      }
      if (ready < 0 && errno != EINTR) {
        error = "poll: " + std::generic_category().message(errno);
        return -1;
      }
      if (ready <= 0)
        continue;
      char chunk[65536];
      ssize_t n = recv(fd, chunk, sizeof chunk, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n <= 0)
        return 0;
      buf.append(chunk, size_t(n));
      return int(n);
    }
  }
};

/// A generated token's log-probability under the model's distribution
/// (its logits' log-softmax: before temperature and top_p, as vLLM's and
/// llama-server's logprobs), and its most likely alternatives'.
struct TokenProb {
  std::string text; ///< as decoded (bytes, perhaps part of a character)
  double logprob;
  size_t offset; ///< characters of the tokens' texts before it
  std::vector<std::pair<std::string, double>> top;
};

/// A log-probability as JSON (-9999.0 for -inf, as vLLM writes it).
std::string probNumber(double x) {
  if (!std::isfinite(x))
    return "-9999.0";
  char b[32];
  snprintf(b, sizeof b, "%.8g", x);
  return b;
}

/// The tokens [from, to) of `probs` as a response's logprobs: chat's
/// {"content": [{token, logprob, bytes, top_logprobs}]}, or completions'
/// {tokens, token_logprobs, top_logprobs, text_offset}.
std::string probsJson(const std::vector<TokenProb> &probs, size_t from,
                      size_t to, bool chat) {
  auto entry = [](const std::string &text, double logprob) {
    std::string bytes;
    for (unsigned char c : text)
      bytes += (bytes.empty() ? "" : ", ") + std::to_string(c);
    return "\"token\": " + jsonString(validUtf8(text)) +
           ", \"logprob\": " + probNumber(logprob) + ", \"bytes\": [" +
           bytes + "]";
  };
  std::string out;
  if (chat) {
    for (size_t i = from; i < to; ++i) {
      std::string top;
      for (auto &[text, lp] : probs[i].top)
        top += (top.empty() ? "{" : ", {") + entry(text, lp) + "}";
      out += (i > from ? ", {" : "{") + entry(probs[i].text, probs[i].logprob) +
             ", \"top_logprobs\": [" + top + "]}";
    }
    return "{\"content\": [" + out + "]}";
  }
  std::string tokens, logprobs, tops, offsets;
  for (size_t i = from; i < to; ++i) {
    const char *sep = i > from ? ", " : "";
    tokens += sep + jsonString(validUtf8(probs[i].text));
    logprobs += sep + probNumber(probs[i].logprob);
    offsets += sep + std::to_string(probs[i].offset);
    // (The sampled token's always, as OpenAI's and vLLM's: up to
    // logprobs + 1 of them; an object's keys once each.)
    std::string top;
    std::vector<std::string> seen;
    auto add = [&](const std::string &text, double lp) {
      std::string key = validUtf8(text);
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        return;
      seen.push_back(key);
      top += (top.empty() ? "" : ", ") + jsonString(key) + ": " +
             probNumber(lp);
    };
    add(probs[i].text, probs[i].logprob);
    for (auto &[text, lp] : probs[i].top)
      add(text, lp);
    tops += sep + ("{" + top + "}");
  }
  return "{\"tokens\": [" + tokens + "], \"token_logprobs\": [" + logprobs +
         "], \"top_logprobs\": [" + tops + "], \"text_offset\": [" +
         offsets + "]}";
}

/// A completion's response as it is written: its frame (the id, the time,
/// the model), each choice's JSON, a stream's events, and the tokens'
/// logprobs a stream has not sent yet.
class ReplyWriter {
public:
  ReplyWriter(Connection &c, const Request &r, const ReplyParts &parts,
              const std::vector<TokenProb> &probs, std::string frame)
      : frame(std::move(frame)), c(c), r(r), parts(parts), probs(probs) {}

  /// A choice with `text`; in chat, with the tool calls `calls` (a JSON
  /// array's text, or ""), or a reasoning delta (`reasoningDelta`); a
  /// whole message with the reply's reasoning where it has a thought;
  /// with the tokens' logprobs `lp` (a JSON value's text, or "").
  std::string choice(const std::string &text, const char *finishReason,
                     bool first, const std::string &calls = "",
                     bool reasoningDelta = false,
                     const std::string &lp = "") const {
    std::string fr =
        finishReason ? std::string("\"") + finishReason + "\"" : "null";
    if (!r.chat)
      return "{\"index\": 0, \"text\": " + jsonString(text) +
             ", \"logprobs\": " + (lp.empty() ? "null" : lp) +
             ", \"finish_reason\": " + fr + "}";
    std::string content = "\"content\": " + jsonString(text);
    std::string toolCalls = calls.empty() ? "" : ", \"tool_calls\": " + calls;
    std::string logprobs = lp.empty() ? "" : ", \"logprobs\": " + lp;
    if (!r.stream)
      return "{\"index\": 0, \"message\": {\"role\": \"assistant\", " +
             (calls.empty() || !text.empty() ? content
                                             : "\"content\": null") +
             (parts.reasoning.empty()
                  ? ""
                  : ", \"reasoning_content\": " + jsonString(parts.reasoning)) +
             toolCalls + "}" + logprobs + ", \"finish_reason\": " + fr + "}";
    if (reasoningDelta)
      return "{\"index\": 0, \"delta\": {\"reasoning_content\": " +
             jsonString(text) + "}" + logprobs + ", \"finish_reason\": null}";
    if (!calls.empty())
      return "{\"index\": 0, \"delta\": {\"tool_calls\": " + calls +
             "}, \"finish_reason\": null}";
    return "{\"index\": 0, \"delta\": {" +
           std::string(first ? "\"role\": \"assistant\", " : "") +
           (finishReason && text.empty() ? "" : content) + "}" + logprobs +
           ", \"finish_reason\": " + fr + "}";
  }
  /// The response (`choices`: a choice's JSON; `more`: the members after
  /// them, or ""), whole or as a stream's event.
  std::string body(const std::string &choices, const std::string &more = "")
      const {
    return frame + "\"choices\": [" + choices + "]" +
           (more.empty() ? "" : ", " + more) + "}";
  }
  bool event(const std::string &json) {
    return c.send("data: " + json + "\n\n");
  }
  /// The logprobs of the tokens a stream has not sent yet (each token's
  /// go with the first delta after it), or "".
  std::string pendingProbs() {
    if (r.logprobs < 0 || probsSent == probs.size())
      return "";
    std::string lp = probsJson(probs, probsSent, probs.size(), r.chat);
    probsSent = probs.size();
    return lp;
  }
  /// A stream's deltas: reasoning, then content.
  void send(const ReplyParts::Delta &d) {
    if (!d.reasoning.empty())
      event(body(
          choice(d.reasoning, nullptr, false, "", true, pendingProbs())));
    if (!d.content.empty())
      event(body(
          choice(d.content, nullptr, false, "", false, pendingProbs())));
  }

private:
  const std::string frame;
  Connection &c;
  const Request &r;
  const ReplyParts &parts;
  const std::vector<TokenProb> &probs;
  size_t probsSent = 0;
};

/// Whether a request's top_k or min_p cuts the distribution (where it
/// samples: LogitShaper applies them).
static bool rankCuts(const Request &r, int32_t vocab) {
  return (r.topK > 0 && r.topK < vocab) || r.minP > 0;
}

/// Whether a request's sampling cuts the distribution by rank or mass
/// (top_k, min_p, top_p < 1): there a grammar masks the logits first
/// (ConstrainedReply::maskFirst).
bool samplingCuts(const Request &r, int32_t vocab, double temperature,
                  double topP) {
  return temperature > 0 && (rankCuts(r, vocab) || topP < 1);
}

/// The logits each token of a reply is sampled from, as the request
/// shapes them: the biases, the repetition penalty over the prompt's and
/// the reply's tokens, the presence and frequency penalties over the
/// reply's, then top_k and min_p where sampling (the tokens they leave out
/// at -inf), as vLLM orders them; before them all, a grammar's mask where
/// it masks first (docs/design.md "Constrained replies"). (The logprobs
/// stay the model's.)
class LogitShaper {
public:
  LogitShaper(const Request &r, int32_t vocab, double temperature,
              ConstrainedReply *grammar, const std::vector<int32_t> &prompt)
      : r(r), vocab(vocab), temperature(temperature), grammar(grammar) {
    sampling = temperature > 0;
    on = r.presencePenalty != 0 || r.frequencyPenalty != 0 ||
         r.repetitionPenalty != 1 || !r.logitBias.empty() ||
         (sampling && rankCuts(r, vocab)) ||
         (grammar && grammar->maskFirst);
    if (on) {
      counts.assign(size_t(vocab), 0);
      seen.assign(size_t(vocab), 0);
      for (int32_t id : prompt)
        note(id, false);
    }
  }
  /// Whether the request shapes the logits at all.
  bool active() const { return on; }
  /// A token of the reply, for the penalties.
  void replied(int32_t id) {
    if (on)
      note(id, true);
  }
  /// `logits` shaped (a copy), or null where the grammar ends the reply.
  const float *operator()(const float *logits) {
    // (NaN or +inf: unshaped, for the sampler to refuse by name.)
    for (int32_t i = 0; i < vocab; ++i)
      if (std::isnan(logits[i]) || logits[i] == INFINITY)
        return logits;
    shaped.assign(logits, logits + vocab);
    float *l = shaped.data();
    if (grammar && grammar->maskFirst && !grammar->mask(l))
      return nullptr;
    for (auto &[t, bias] : r.logitBias)
      l[t] += float(bias);
    float rp = float(r.repetitionPenalty);
    if (rp != 1)
      for (int32_t t : seenList)
        l[t] = l[t] > 0 ? l[t] / rp : l[t] * rp;
    for (int32_t t : replyList)
      l[t] -= float(r.frequencyPenalty * counts[size_t(t)] + r.presencePenalty);
    if (sampling && r.topK > 0 && r.topK < vocab) {
      // (Ties with the k-th are kept.)
      order.assign(l, l + vocab);
      std::nth_element(order.begin(), order.begin() + (r.topK - 1),
                       order.end(), std::greater<float>());
      float kth = order[size_t(r.topK - 1)];
      for (int32_t i = 0; i < vocab; ++i)
        if (l[i] < kth)
          l[i] = -INFINITY;
    }
    if (sampling && r.minP > 0) {
      // (p_i >= min_p * p_max at the temperature.)
      float cut = *std::max_element(l, l + vocab) +
                  float(temperature * std::log(r.minP));
      for (int32_t i = 0; i < vocab; ++i)
        if (l[i] < cut)
          l[i] = -INFINITY;
    }
    return l;
  }

private:
  void note(int32_t id, bool reply) {
    if (!seen[size_t(id)]) {
      seen[size_t(id)] = 1;
      seenList.push_back(id);
    }
    if (reply && counts[size_t(id)]++ == 0)
      replyList.push_back(id);
  }

  const Request &r;
  int32_t vocab;
  double temperature;
  ConstrainedReply *grammar;
  bool sampling = false, on = false;
  std::vector<float> shaped, order;
  std::vector<int32_t> counts, seenList, replyList;
  std::vector<uint8_t> seen;
};

class Server {
public:
  Server(const ServedModel &m, const ServeOptions &opts, archrt_seq *seq)
      : m(m), opts(opts),
        model(opts.alias.empty() ? std::string(m.info.name) : opts.alias),
        cache{m.lib, seq, m.info.max_seq_len, {}} {
    // The tool-call format's marks and a thought's that the tokenizer
    // holds special (so, stop tokens), as Mistral's [TOOL_CALLS] and Llama
    // 3.1's <|python_tag|>: a reply goes on after them. (A thought's
    // whatever the server's reasoning format: a request may name its own.)
    for (const std::string &mark : replyMarks(m.tools, true)) {
      std::vector<int32_t> ids;
      std::string error;
      if (encode(mark, false, ids, error) && ids.size() == 1 &&
          m.lib.archrt_tokenizer_is_stop(m.tok, ids[0]))
        marks.push_back(ids[0]);
    }
  }

  /// Whether request `r`'s <think> thought goes to reasoning_content: its
  /// reasoning_format's answer, else the server's.
  bool thinks(const Request &r) const {
    if (r.reasoningFormat.empty())
      return m.thoughts;
    return r.reasoningFormat == "deepseek" ||
           (r.reasoningFormat == "auto" && m.templateThinks);
  }

  void handle(Connection &c) {
    HttpHead head;
    std::string body, error;
    int status = c.read(head, body, error);
    if (status < 0)
      return;
    if (status) {
      finish(c, head, status, error);
      return;
    }
    const char *allowed = nullptr;
    if (head.path == "/health" || head.path == "/v1/models") {
      if (head.method == "GET") {
        // (Logged first: a client answered may send its next request at
        // once, and its lines keep their order.)
        log(head, 200, "");
        c.respond(200, head.path == "/health" ? "{\"status\": \"ok\"}"
                                              : modelsBody());
        return;
      }
      allowed = "GET";
    } else if (head.path == "/v1/chat/completions" ||
               head.path == "/v1/completions" || head.path == "/tokenize" ||
               head.path == "/detokenize") {
      if (head.method == "POST") {
        // (The model, its sequence and its tokenizer serve one request
        // at a time; the others' requests are read meanwhile.)
        std::lock_guard<std::mutex> hold(modelLock);
        // (A request that waited its turn is not run for a server that is
        // stopping, or for a client that has left.)
        if (stopping)
          return finish(c, head, 503, "the server is stopping");
        if (c.gone())
          return finish(c, head, 503, "the client left before its turn");
        post(c, head, body);
        return;
      }
      allowed = "POST";
    }
    if (allowed)
      finish(c, head, 405, head.method + " is not served at " + head.path,
             std::string("Allow: ") + allowed + "\r\n");
    else
      finish(c, head, 404, "no such endpoint: " + validUtf8(head.path));
  }

  /// Writes `text` to stderr whole, between other threads' lines.
  void say(const std::string &text) {
    std::lock_guard<std::mutex> hold(logLock);
    llvm::errs() << text;
    llvm::errs().flush();
  }

private:
  const ServedModel &m;
  const ServeOptions &opts;
  std::string model;
  HeldSequence cache;
  std::mutex modelLock; ///< held by the request that uses the model
  std::mutex logLock;   ///< held while a line is written, and its count
  int64_t requests = 0; ///< (logLock's)
  int64_t completions = 0; ///< (modelLock's)
  std::mt19937_64 callIds{std::random_device()()}; ///< (modelLock's)
  std::vector<int32_t> marks; ///< special tokens that do not stop a reply
  /// The vocabulary as grammars see it: made at the first request with a
  /// grammar (modelLock's).
  std::unique_ptr<GrammarVocabulary> vocabulary;

  /// `token`'s log-probability at the sequence's last logits (those it was
  /// sampled from), and its `k` most likely alternatives' (decoded after
  /// `prev`).
  TokenProb tokenProb(int32_t prev, int32_t token, std::string text,
                      size_t offset, int64_t k) {
    const float *logits = m.lib.archrt_logits(cache.seq);
    int32_t n = m.info.vocab_size;
    float most = -INFINITY;
    for (int32_t i = 0; i < n; ++i)
      most = std::max(most, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n; ++i)
      sum += std::exp(double(logits[i]) - most);
    double lse = most + std::log(sum);
    TokenProb p{std::move(text), logits[token] - lse, offset, {}};
    std::vector<std::pair<float, int32_t>> best; // descending
    for (int32_t i = 0; k > 0 && i < n; ++i) {
      if (best.size() == size_t(k) && !(logits[i] > best.back().first))
        continue;
      auto at = std::upper_bound(
          best.begin(), best.end(), logits[i],
          [](float v, const std::pair<float, int32_t> &b) {
            return v > b.first;
          });
      best.insert(at, {logits[i], i});
      if (best.size() > size_t(k))
        best.pop_back();
    }
    for (auto &[v, i] : best)
      p.top.push_back({m.lib.archrt_tokenizer_decode(m.tok, prev, i),
                       double(v) - lse});
    return p;
  }

  /// A tool call's id: 9 letters and digits (what Mistral's templates ask
  /// of the ids a conversation sends back).
  std::string callId() {
    static const char kChars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id(9, ' ');
    for (char &c : id)
      c = kChars[callIds() % (sizeof kChars - 1)];
    return id;
  }


  /// An error response, and its line in the log.
  void finish(Connection &c, const HttpHead &head, int status,
              const std::string &error, const std::string &headers = "") {
    log(head, status, error);
    c.respond(status, errorBody(status, error), headers);
  }

  void log(const HttpHead &head, int status, const std::string &what) {
    std::lock_guard<std::mutex> hold(logLock);
    ++requests;
    if (!opts.quiet)
      llvm::errs() << "[archc] request " << requests << ": "
                   << (head.method.empty()
                           ? std::string("(no request line)")
                           : validUtf8(head.method.substr(0, 16)) + " " +
                                 validUtf8(head.path.substr(0, 64)))
                   << " " << status
                   << (what.empty() ? "" : ": ") << what << "\n";
  }

  std::string modelsBody() const {
    return "{\"object\": \"list\", \"data\": [{\"id\": " + jsonString(model) +
           ", \"object\": \"model\", \"created\": " +
           std::to_string(time(nullptr)) +
           ", \"owned_by\": \"archc\", \"max_model_len\": " +
           std::to_string(m.info.max_seq_len) + "}]}";
  }

  /// Token ids of `text`, as many as the tokenizer gives. False with
  /// `error` (400 material: a NUL byte, the tokenizer's refusal).
  bool encode(const std::string &text, bool special,
              std::vector<int32_t> &ids, std::string &error) {
    if (text.find('\0') != std::string::npos) {
      error = "the prompt holds a NUL character";
      return false;
    }
    ids.resize(std::min<size_t>(text.size() + 8, INT32_MAX / 2));
    int32_t n = 0;
    archrt_status st = m.lib.archrt_tokenizer_encode(
        m.tok, text.c_str(), special, 0, ids.data(), int32_t(ids.size()), &n);
    if (st != ARCHRT_OK && n > int32_t(ids.size())) {
      ids.resize(size_t(n));
      st = m.lib.archrt_tokenizer_encode(m.tok, text.c_str(), special, 0,
                                         ids.data(), n, &n);
    }
    if (st != ARCHRT_OK) {
      error = m.lib.archrt_last_error();
      return false;
    }
    ids.resize(size_t(n));
    return true;
  }

  void post(Connection &c, const HttpHead &head, const std::string &body) {
    std::string error;
    if (head.path == "/tokenize") {
      std::string content;
      bool special;
      std::vector<int32_t> ids;
      if (int status = parseTokenize(body, content, special, error))
        return finish(c, head, status, error);
      if (!encode(content, special, ids, error))
        return finish(c, head, 400, error);
      std::string out = "{\"tokens\": [";
      for (size_t i = 0; i < ids.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ids[i]);
      c.respond(200, out + "]}");
      return log(head, 200, "");
    }
    if (head.path == "/detokenize") {
      std::vector<int64_t> ids;
      if (int status = parseDetokenize(body, ids, error))
        return finish(c, head, status, error);
      std::string text;
      int32_t prev = -1;
      for (int64_t id : ids) {
        if (id >= m.info.vocab_size)
          return finish(c, head, 400,
                        "'tokens': " + std::to_string(id) +
                            " is outside the vocabulary [0, " +
                            std::to_string(m.info.vocab_size) + ")");
        text += m.lib.archrt_tokenizer_decode(m.tok, prev, int32_t(id));
        prev = int32_t(id);
      }
      c.respond(200, "{\"content\": " + jsonString(validUtf8(text)) + "}");
      return log(head, 200, "");
    }
    Request r;
    bool chat = head.path == "/v1/chat/completions";
    if (int status = parseRequest(body, chat, r, error))
      return finish(c, head, status, error);
    complete(c, head, r);
  }

  /// The request's prompt as token ids: a chat's messages rendered in the
  /// model's template (`rendered`), a text encoded, or ids checked; false
  /// with a 400's `error`.
  bool promptIds(const Request &r, std::string &rendered,
                 std::vector<int32_t> &ids, std::string &error) {
    const archrt_model_info &info = m.info;
    if (r.chat) {
      if (!m.format)
        return error = m.noChat, false;
      // The server's template variables, the request's after them. (A
      // template that refuses an assistant message's null content, as
      // Qwen 3's does, gets "" in its place.)
      auto render = [&](const std::string &messages, std::string &why) {
        return m.format->tmpl->render(
            chatContext(messages, {opts.templateKwargs, r.templateVars}),
            m.format->specials, rendered, why);
      };
      std::string retry;
      if (!render(r.messages, error) &&
          (r.messagesNonNull.empty() || !render(r.messagesNonNull, retry)))
        return error = "the chat template: " + error, false;
      // (The template writes the special tokens; the tokenizer adds none.)
      if (!encode(rendered, false, ids, error))
        return false;
    } else if (r.promptIsIds) {
      for (int64_t id : r.promptIds) {
        if (id >= info.vocab_size)
          return error = "'prompt': token " + std::to_string(id) +
                         " is outside the vocabulary [0, " +
                         std::to_string(info.vocab_size) + ")",
                 false;
        ids.push_back(int32_t(id));
      }
    } else if (!encode(r.prompt, true, ids, error)) {
      return false;
    }
    if (ids.empty())
      return error = "the prompt is empty: no tokens", false;
    if (ids.size() > size_t(info.max_seq_len))
      return error = "the prompt is " + std::to_string(ids.size()) +
                     " tokens, more than the model's context (max_seq_len " +
                     std::to_string(info.max_seq_len) + ")",
             false;
    return true;
  }

  /// The reply's grammar: the request's, or where tool_choice asks for a
  /// call, one of the model's call format over the tools' schemas (after
  /// the rest of a thought the prompt opened, or a thought the model may
  /// open where it thinks and the prompt did not close one already); null
  /// where none (`calls`: what a required call's grammar starts with, for
  /// --verbose-prompt). False with a 400's `error`.
  bool replyGrammar(const Request &r, const std::string &rendered,
                    std::shared_ptr<const Grammar> &constraint,
                    std::string &calls, std::string &error) {
    constraint = r.grammar;
    if (!r.toolRequired)
      return true;
    std::string gbnf;
    ThoughtBefore thought = !thinks(r) ? ThoughtBefore::None
                            : opensThought(rendered) ? ThoughtBefore::Opened
                            : closesThought(rendered) ? ThoughtBefore::None
                                                      : ThoughtBefore::Own;
    calls = thought == ThoughtBefore::Opened ? "the rest of the prompt's thought"
            : thought == ThoughtBefore::Own  ? "a thought the model may open"
                                             : "no thought";
    if (!toolCallGrammar(m.tools, r.tools, r.toolNamed, r.parallelToolCalls,
                         thought, gbnf, error))
      return error = "'tool_choice' asks for a call: " + error, false;
    // (The tools' schemas may make a grammar too large, or too ambiguous
    // at its start, as a request's own grammar may.)
    constraint = Grammar::parse(gbnf, error);
    if (!constraint)
      return error = "'tool_choice' asks for a call: the tools' grammar "
                     "does not parse (" + error + ")",
             false;
    if (GrammarMatcher(constraint).overflowed())
      return error = "'tool_choice' asks for a call: the tools' grammar is "
                     "too ambiguous: " + GrammarMatcher::startLimits(),
             false;
    return true;
  }

  void complete(Connection &c, const HttpHead &head, const Request &r) {
    std::string error, rendered;
    std::vector<int32_t> ids;
    const archrt_model_info &info = m.info;
    if (!promptIds(r, rendered, ids, error))
      return finish(c, head, 400, error);
    for (auto &[id, bias] : r.logitBias)
      if (id >= info.vocab_size)
        return finish(c, head, 400,
                      "'logit_bias': token " + std::to_string(id) +
                          " is outside the vocabulary [0, " +
                          std::to_string(info.vocab_size) + ")");
    std::shared_ptr<const Grammar> constraint;
    std::string callsAfter;
    if (!replyGrammar(r, rendered, constraint, callsAfter, error))
      return finish(c, head, 400, error);
    double temperature = r.temperature >= 0 ? r.temperature : opts.temperature;
    double topP = r.topP >= 0 ? r.topP : opts.topP;
    uint64_t seed = r.hasSeed ? r.seed : std::random_device()() * 0x9E3779B97F4A7C15ull;
    archrt_sampler *sampler = nullptr;
    if (m.lib.archrt_sampler_create(info.vocab_size, float(temperature),
                                    float(topP), seed, &sampler) != ARCHRT_OK)
      return finish(c, head, 400, m.lib.archrt_last_error());
    struct FreeSampler {
      ModelLib &lib;
      archrt_sampler *s;
      ~FreeSampler() { lib.archrt_sampler_free(s); }
    } freeSampler{m.lib, sampler};

    HeldSequence::Prefill pre;
    if (!cache.prefill(ids, pre, error))
      return finish(c, head, 500, error);
    ++completions;
    std::string at = "completion " + std::to_string(completions) + ": ";
    if (opts.verbosePrompt)
      say("[archc] " + at + "prompt " +
          jsonString(r.chat ? rendered : r.prompt) + "\n[archc] " + at +
          "prefill " + std::to_string(pre.prompt.size()) + " tokens after " +
          std::to_string(pre.kept) + (pre.reset ? " (reset)" : "") + ":" +
          idList(pre.prompt) + "\n" +
          (callsAfter.empty() ? ""
                              : "[archc] " + at + "required calls after " +
                                    callsAfter + "\n"));

    // The response's frame: an id, the time, the model.
    std::string id = std::string(r.chat ? "chatcmpl-" : "cmpl-") + "archc-" +
                     std::to_string(completions);
    std::string frame = "{\"id\": " + jsonString(id) + ", \"object\": \"" +
                        (r.chat ? (r.stream ? "chat.completion.chunk"
                                            : "chat.completion")
                                : "text_completion") +
                        "\", \"created\": " + std::to_string(time(nullptr)) +
                        ", \"model\": " + jsonString(model) + ", ";
    // The reply's text, and its parts. (Where the request gives tools, the
    // text from where a call may start is held back until the reply is
    // whole. Where the model thinks, the text released goes to reasoning
    // or content by the thought's place.)
    StopScanner text(r.stop);
    ToolFormat tools = r.toolCalls ? m.tools : ToolFormat::None;
    ReplyParts parts(tools, r.chat && thinks(r),
                     r.chat && thinks(r) && opensThought(rendered));
    // Each generated token's log-probabilities where the request asks
    // for them.
    std::vector<TokenProb> probs;
    ReplyWriter w(c, r, parts, probs, std::move(frame));
    if (r.stream) {
      c.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             "Cache-Control: no-cache\r\nConnection: close\r\n\r\n");
      if (r.chat)
        w.event(w.body(w.choice("", nullptr, true)));
    }
    int64_t budget = r.maxTokens >= 0 ? r.maxTokens
                     : opts.maxTokens >= 0 ? opts.maxTokens
                                           : int64_t(INT_MAX);
    // A grammar's matcher: each token sampled stands where it takes it,
    // else it is sampled again with the tokens the grammar does not allow
    // at -inf; where the sampling cuts by rank or mass, they go to -inf
    // first (docs/design.md "Constrained replies").
    int32_t vocab = info.vocab_size;
    std::optional<ConstrainedReply> grammar;
    if (constraint) {
      if (!vocabulary)
        vocabulary = grammarVocabulary(m.lib, m.tok, vocab, marks);
      grammar.emplace(*vocabulary, constraint,
                      samplingCuts(r, vocab, temperature, topP));
    }
    LogitShaper shaper(r, vocab, temperature, grammar ? &*grammar : nullptr,
                       ids);
    std::vector<int32_t> generated;
    HeldSequence::End end;
    // (The token before each generated one, as the generation decodes it;
    // the characters of the reply so far.)
    int32_t prev = cache.held.empty() ? 0 : cache.held.back();
    size_t chars = 0;
    auto t0 = Clock::now();
    bool ok = cache.generate(
        m.tok, sampler, int(std::min<int64_t>(budget, INT_MAX)),
        [&](const char *piece, int32_t id) {
          // (Its own copy: decoding the alternatives reuses the buffer.)
          std::string own = piece;
          if (r.logprobs >= 0) {
            probs.push_back(tokenProb(prev, id, own, chars, r.logprobs));
            // (Characters as the tokens' texts are returned: each made
            // valid UTF-8.)
            for (unsigned char ch : validUtf8(own))
              chars += (ch & 0xC0) != 0x80;
          }
          prev = id;
          shaper.replied(id);
          if (text.add(own.c_str()))
            return false;
          if (r.stream)
            w.send(parts.step(text));
          return !(r.stream ? c.broken : c.gone()) && !stopping;
        },
        // (A constrained reply ends at its stop token even with
        // ignore_eos: text after it would leave the grammar.)
        generated, end, error, r.ignoreEos && !constraint, marks,
        shaper.active()
            ? llvm::function_ref<const float *(const float *)>(shaper)
            : nullptr,
        grammar ? &*grammar : nullptr);
    double decodeS = since(t0);
    std::string grammarError = grammar ? grammar->error() : "";
    if (!grammarError.empty()) {
      ok = false;
      error = grammarError;
    }
    if (!ok) {
      // (The runtime failed mid-generation, or the request's grammar
      // could not go on (a 400: the client's; but a token the grammar
      // allowed and then refused is archc's, a 500, as the runtime's
      // failures): said in the stream, or as the response.)
      int status = grammarError.empty() ? 500 : 400;
      if (r.stream)
        w.event(errorBody(status, error));
      else
        c.respond(status, errorBody(status, error));
      return log(head, status, error);
    }
    // The reply's tool calls, where it holds well-formed ones and ended as
    // the model ended it (a reply cut short is content): the text around
    // them is its content.
    bool whole = end == HeldSequence::End::Stop || text.hit();
    ReplyParts::Delta last = parts.finish(text, whole, r.parallelToolCalls);
    bool called = !parts.calls.empty();
    std::string calls;
    for (size_t i = 0; i < parts.calls.size(); ++i)
      calls += std::string(i ? ", " : "") + "{" +
               (r.stream ? "\"index\": " + std::to_string(i) + ", " : "") +
               "\"id\": " + jsonString(callId()) +
               ", \"type\": \"function\", \"function\": {\"name\": " +
               jsonString(validUtf8(parts.calls[i].name)) +
               ", \"arguments\": " +
               jsonString(validUtf8(parts.calls[i].arguments)) + "}}";
    if (called)
      calls = "[" + calls + "]";
    // Tool calls: "tool_calls"; EOS or a stop string: "stop"; the budget,
    // the context, or a client gone or the server stopping: "length".
    const char *finishReason = called ? "tool_calls"
                               : whole  ? "stop"
                                        : "length";
    size_t prompt = ids.size(), completion = generated.size();
    std::string usage =
        "\"usage\": {\"prompt_tokens\": " + std::to_string(prompt) +
        ", \"completion_tokens\": " + std::to_string(completion) +
        ", \"total_tokens\": " + std::to_string(prompt + completion) +
        ", \"prompt_tokens_details\": {\"cached_tokens\": " +
        std::to_string(pre.kept) + "}}";
    std::string timings =
        "\"timings\": {\"prompt_n\": " + std::to_string(pre.prompt.size()) +
        ", \"prompt_ms\": " + std::to_string(pre.seconds * 1e3) +
        ", \"predicted_n\": " + std::to_string(completion) +
        ", \"predicted_ms\": " + std::to_string(decodeS * 1e3) + "}";
    if (r.stream) {
      w.send(last);
      if (called)
        w.event(w.body(w.choice("", nullptr, false, calls)));
      std::string lp = w.pendingProbs();
      if (!lp.empty())
        w.event(w.body(w.choice("", nullptr, false, "", false, lp)));
      w.event(w.body(w.choice("", finishReason, false), timings));
      if (r.includeUsage)
        w.event(w.body("", usage));
      c.send("data: [DONE]\n\n");
    } else {
      std::string lp =
          r.logprobs < 0 ? "" : probsJson(probs, 0, probs.size(), r.chat);
      c.respond(200, w.body(w.choice(parts.content, finishReason, false,
                                     calls, false, lp),
                            usage + ", " + timings));
    }
    if (opts.verbosePrompt)
      say("[archc] " + at + "reply " + jsonString(validUtf8(text.text())) +
          "\n[archc] " + at + "reply " + std::to_string(generated.size()) +
          " tokens:" + idList(generated) + "\n" +
          (grammar ? "[archc] " + at + "grammar: the mask made at " +
                         std::to_string(grammar->masks()) + " of " +
                         std::to_string(grammar->sampled()) + " tokens\n"
                   : ""));
    char line[256];
    snprintf(line, sizeof line,
             "%zu prompt tokens (%zu kept in the cache%s) prefilled at %.1f "
             "tok/s; %zu generated at %.1f tok/s, finish %s%s",
             prompt, pre.kept, pre.reset ? ", which could not go back: reset"
                                         : "",
             double(pre.prompt.size()) / std::max(pre.seconds, 1e-9),
             completion, double(completion) / std::max(decodeS, 1e-9),
             finishReason, c.broken ? " (the client left)" : "");
    std::string logged = line;
    if (called)
      logged += " (" + std::to_string(parts.calls.size()) + " tool call" +
                (parts.calls.size() > 1 ? "s" : "") + ")";
    log(head, 200, logged);
  }
};

} // namespace

int listenOn(const std::string &host, int port, int &bound,
             std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo *addrs = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &addrs)) {
    error = "--host " + host + ": " + gai_strerror(rc);
    return -1;
  }
  int listener = -1;
  std::string why = "no address";
  for (addrinfo *a = addrs; a && listener < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                    a->ai_protocol);
    int on = 1;
    if (fd >= 0 &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0 &&
        bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
      listener = fd;
      break;
    }
    why = strerror(errno);
    if (fd >= 0)
      close(fd);
  }
  freeaddrinfo(addrs);
  if (listener < 0) {
    error = "cannot listen on " + host + ":" + service + ": " + why;
    return -1;
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr *>(&addr), &len);
  bound = ntohs(addr.ss_family == AF_INET6
                    ? reinterpret_cast<sockaddr_in6 *>(&addr)->sin6_port
                    : reinterpret_cast<sockaddr_in *>(&addr)->sin_port);
  return listener;
}

int runServer(int listener, int port, const ServedModel &m,
              const ServeOptions &opts) {
  archrt_seq *seq = nullptr;
  if (m.lib.archrt_seq_create(m.model, 0, &seq) != ARCHRT_OK) {
    close(listener);
    return fail(m.lib.archrt_last_error());
  }
  // SIGINT and SIGTERM end the loop (not SA_RESTART: a wait returns).
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  {
    Server server(m, opts, seq);
    std::string host = opts.host.find(':') != std::string::npos
                           ? "[" + opts.host + "]"
                           : opts.host;
    llvm::errs() << "archc serve: " << (opts.alias.empty() ? m.info.name : opts.alias)
                 << " (context " << m.info.max_seq_len << " tokens"
                 << (m.format ? ", chat template " + m.format->source
                              : std::string(", no chat template"))
                 << (m.tools != ToolFormat::None
                         ? std::string(", tool calls ") + toolFormatName(m.tools)
                         : "")
                 << (m.thoughts ? ", thoughts to reasoning_content" : "")
                 << ") on http://" << host << ":" << port << "\n";
    llvm::errs().flush();
    // Each connection is read and answered by a thread of its own (a
    // slow or silent client holds only its own); the model serves one
    // request at a time (Server::modelLock).
    std::atomic<int> active{0};
    while (!stopping) {
      pollfd p{listener, POLLIN, 0};
      if (poll(&p, 1, 250) <= 0)
        continue;
      int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      if (active >= kMaxConnections) {
        std::string body = errorBody(
            503, "more than " + std::to_string(kMaxConnections) +
                     " connections at once");
        std::string busy = "HTTP/1.1 503 Service Unavailable\r\n"
                           "Content-Type: application/json\r\n"
                           "Content-Length: " +
                           std::to_string(body.size()) +
                           "\r\nConnection: close\r\n\r\n" + body;
        (void)::send(fd, busy.data(), busy.size(),
                     MSG_NOSIGNAL | MSG_DONTWAIT);
        // (What of its request has arrived is read first, without
        // waiting, so that closing does not reset the connection before
        // the client reads the answer; the accept loop never waits here.)
        shutdown(fd, SHUT_WR);
        char chunk[16384];
        for (int reads = 0;
             reads < 4 && recv(fd, chunk, sizeof chunk, MSG_DONTWAIT) > 0;
             ++reads) {
        }
        close(fd);
        continue;
      }
      ++active;
      auto serveOne = [&server, &active, fd, timeout = opts.timeoutSeconds] {
        // (The count drops last, whatever happens: after the connection's
        // close, so that the server outlives every use of it.)
        struct Done {
          std::atomic<int> &active;
          ~Done() { --active; }
        } done{active};
        try {
          Connection c(fd, timeout);
          try {
            server.handle(c);
          } catch (const std::exception &e) {
            // (Memory a request needs, mostly: it fails alone. A response
            // begun is cut off rather than followed by another.)
            if (!c.started)
              c.respond(503, errorBody(503, std::string("the request could "
                                                        "not be served: ") +
                                                e.what()));
            server.say(std::string("[archc] a request failed: ") +
                       e.what() + "\n");
          }
        } catch (...) {
          // (Out of memory even for the answer: the connection closed.)
        }
      };
      try {
        std::thread(serveOne).detach();
      } catch (const std::exception &e) {
        // (No thread to be had: the connection closed unanswered.)
        server.say(std::string("[archc] a connection dropped: ") + e.what() +
                   "\n");
        close(fd);
        --active;
      }
    }
    // (The connections see `stopping` and end: a request being read is
    // answered 503, a generation stops at its next token.)
    while (active > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  m.lib.archrt_seq_free(seq);
  close(listener);
  llvm::errs() << "archc serve: stopped\n";
  return 0;
}

} // namespace arch
