#!/usr/bin/env node
// The reference encoder for the tokenizer.json tests: @lenml/tokenizers 3.7.2
// (transformers.js' tokenizers) over a corpus from make_corpus.py.
//
//   node reference.mjs TOKENIZER_DIR CORPUS            ids, one line per record
//   node reference.mjs TOKENIZER_DIR CORPUS --decode   JSON.stringify(decode(encode(x)))
//   node reference.mjs TOKENIZER_DIR CORPUS --bench    encode MB/s on stderr
//   node reference.mjs TOKENIZER_DIR CORPUS --no-special
//                      ids of encode(x, {add_special_tokens: false}), as a
//                      rendered chat template is tokenized
//
// TOKENIZER_DIR holds tokenizer.json and tokenizer_config.json
// (scripts/fetch-tokenizers.sh puts them in CACHE/tokenizers/NAME). The
// library is imported from $ARCHC_TOKENIZERS_NODE_MODULES (default
// ${ARCHC_CACHE:-~/.cache/archc}/tokenizers/node_modules).
//
// CORPUS is split on 0x00 bytes into records (a file of N-1 separators holds
// N records; an empty file is one empty record). Each record is decoded with
// a non-fatal TextDecoder: every maximal invalid UTF-8 subpart becomes one
// U+FFFD (the WHATWG/Unicode "maximal subpart" practice). A leading U+FEFF
// is kept as text (ignoreBOM: true); the default TextDecoder would drop it.
// The string is encoded with encode(text), i.e. add_special_tokens = true.
// The library adds special tokens only through tokenizer.json's
// post_processor and ignores add_bos_token/add_eos_token of
// tokenizer_config.json, so:
//   llama2       TemplateProcessing: prepends <s> (1), appends nothing
//   gemma3       TemplateProcessing: prepends <bos> (2), appends nothing
//   llama3       ByteLevel post-processor: adds nothing (no <|begin_of_text|>)
//   qwen3        ByteLevel post-processor: adds nothing
//   deepseek_v3  ByteLevel post-processor: adds nothing, although its config
//                says add_bos_token: true (Python's LlamaTokenizerFast would
//                prepend <｜begin▁of▁sentence｜>, 0)
// Output lines are the ids joined by single spaces (an empty line for none).
// --decode decodes with skip_special_tokens = false and the library's default
// clean_up_tokenization_spaces (the config's value; true for llama3), and
// prints "" for a record with no ids (the library's decode rejects []).
// --bench times encode alone (the strings are decoded beforehand): one warm-up
// pass, then the median of 5 passes, in MB/s of UTF-8 record bytes (1 MB =
// 1e6 bytes), single-threaded. The library's BPE keeps an LRU cache of 10000
// words, warm after the first pass.

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

function die(msg, code = 1) {
  process.stderr.write(`reference.mjs: ${msg}\n`);
  process.exit(code);
}

const usage = "usage: node reference.mjs TOKENIZER_DIR CORPUS [--decode | --bench | --no-special]";
const positional = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const flags = new Set(process.argv.slice(2).filter((a) => a.startsWith("--")));
for (const f of flags) {
  if (f !== "--decode" && f !== "--bench" && f !== "--no-special")
    die(`unknown option ${f}\n${usage}`, 2);
}
if (positional.length !== 2 || flags.size > 1) die(usage, 2);
const [tokDir, corpusPath] = positional;
const mode = flags.has("--bench") ? "bench" : flags.has("--decode") ? "decode" : "ids";
const special = !flags.has("--no-special");

// The library: its package.json's "exports" maps "." to dist/main.mjs for
// import; it has no runtime dependencies (core-js is bundled into dist/).
const nodeModules =
  process.env.ARCHC_TOKENIZERS_NODE_MODULES ||
  join(process.env.ARCHC_CACHE || join(homedir(), ".cache", "archc"),
       "tokenizers", "node_modules");
const pkgDir = resolve(nodeModules, "@lenml", "tokenizers");
let pkg;
try {
  pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
} catch (e) {
  die(`cannot read ${pkgDir}/package.json (run scripts/fetch-tokenizers.sh and set ` +
      `ARCHC_TOKENIZERS_NODE_MODULES): ${e.message}`);
}
if (pkg.version !== "3.7.2") {
  die(`${pkgDir} is @lenml/tokenizers ${pkg.version}, expected 3.7.2`);
}
const entry = pathToFileURL(join(pkgDir, pkg.exports["."].import)).href;
const { TokenizerLoader } = await import(entry);

function readJSON(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    die(`cannot read ${path}: ${e.message}`);
  }
}
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJSON(join(tokDir, "tokenizer.json")),
  tokenizerConfig: readJSON(join(tokDir, "tokenizer_config.json")),
});

// Records: the corpus split on 0x00, decoded to strings.
let corpus;
try {
  corpus = readFileSync(corpusPath);
} catch (e) {
  die(`cannot read ${corpusPath}: ${e.message}`);
}
const utf8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const texts = [];
let inputBytes = 0;
for (let start = 0; ; ) {
  let end = corpus.indexOf(0, start);
  if (end < 0) end = corpus.length;
  texts.push(utf8.decode(corpus.subarray(start, end)));
  inputBytes += end - start;
  if (end === corpus.length) break;
  start = end + 1;
}

if (mode === "bench") {
  const pass = () => {
    const t0 = process.hrtime.bigint();
    for (const t of texts) tokenizer.encode(t);
    return Number(process.hrtime.bigint() - t0) / 1e9;
  };
  pass(); // warm-up (JIT, BPE cache)
  const secs = Array.from({ length: 5 }, pass).sort((a, b) => a - b);
  const mbps = inputBytes / secs[2] / 1e6;
  process.stderr.write(
    `reference ${basename(resolve(tokDir))}: ${mbps.toFixed(3)} MB/s encode ` +
      `(median of 5 passes over ${texts.length} records, ${inputBytes} bytes; ` +
      `passes ${secs.map((s) => s.toFixed(3)).join(" ")} s)\n`,
  );
} else {
  const lines = texts.map((text) => {
    const ids = tokenizer.encode(text, { add_special_tokens: special });
    if (mode === "ids") return ids.join(" ");
    const out = ids.length ? tokenizer.decode(ids, { skip_special_tokens: false }) : "";
    return JSON.stringify(out);
  });
  process.stdout.write(lines.join("\n") + "\n");
}
