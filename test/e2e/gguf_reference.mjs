// What @huggingface/gguf (Hugging Face's GGUF reader) reads of a GGUF
// file's header, printed as runtime/tools/archrt-gguf.c prints archc's
// reading: the version, general.architecture, general.alignment (32
// where absent), where the tensor data starts, the architecture's shape keys, and each tensor by name
// (type id, dims innermost first, offset in the data section).
//   node gguf_reference.mjs FILE.gguf
// The package is loaded from $ARCHC_TOKENIZERS_NODE_MODULES (default
// ${ARCHC_CACHE:-~/.cache/archc}/tokenizers/node_modules, where
// scripts/fetch-tokenizers.sh installs it).
import { createRequire } from "node:module";
import { homedir } from "node:os";
import path from "node:path";

const modules = process.env.ARCHC_TOKENIZERS_NODE_MODULES ||
  path.join(process.env.ARCHC_CACHE || path.join(homedir(), ".cache", "archc"),
            "tokenizers", "node_modules");
const require = createRequire(path.join(modules, "noop.js"));
const { gguf } = require("@huggingface/gguf");

const file = path.resolve(process.argv[2]);
const { metadata, tensorInfos, tensorDataOffset } =
  await gguf(file, { allowLocalFile: true });
const out = [];
out.push(`version ${metadata.version}`);
out.push(`general.architecture ${metadata["general.architecture"] ?? ""}`);
out.push(`general.alignment ${metadata["general.alignment"] ?? 32}`);
out.push(`data ${tensorDataOffset}`);
for (const suffix of [".embedding_length", ".block_count", ".attention.head_count",
                      ".attention.head_count_kv", ".feed_forward_length"]) {
  const arch = metadata["general.architecture"];
  const v = metadata[arch + suffix];
  if (v !== undefined) out.push(`${arch}${suffix} ${v}`);
}
const byName = (a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name));
for (const t of [...tensorInfos].sort(byName))
  out.push(`tensor ${t.name} type ${t.dtype} dims ${t.shape.join(",")} offset ${t.offset}`);
console.log(out.join("\n"));
