//===- GGUFConfig.h - A GGUF file's metadata as a config.json ---*- C++ -*-===//
//
// `archc import-hf FILE.gguf` and `archc compile|check|run FILE.gguf`: the
// metadata llama.cpp's converter keeps in a GGUF file (its architecture's
// shape keys, RoPE, norm epsilon; the tensor table says what is tied and
// biased) written back as the Hugging Face config.json it came from, which
// importHFConfig then makes a spec: the model llama.cpp runs from the file
// (so a Mistral 7B v0.1 file, converted as llama, has no sliding window,
// as in llama.cpp). The architectures: llama (Llama, Mistral, and Mixtral
// where it has experts), qwen2, qwen2moe, qwen3, qwen3moe, gemma2, gemma3
// and phi3, each with the defaults and rules llama.cpp applies where the
// metadata is silent (Gemma's sliding-window pattern and query scale,
// Qwen-MoE's renormalization); others are refused by name.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_IMPORT_GGUFCONFIG_H
#define ARCHC_IMPORT_GGUFCONFIG_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace arch {

/// Whether `path` names a GGUF file (by its first four bytes).
bool isGGUFFile(const std::string &path);

/// The config.json text of GGUF file `path`, with the architecture's
/// metadata keys it does not read in `unread` (the caller warns); on
/// failure `error` names the file and the key or tensor at fault.
bool ggufConfigJSON(const std::string &path, std::string &json,
                    std::vector<std::string> &unread, std::string &error);

/// The same of a file's `size` bytes at `data`, `path` naming it in the
/// errors (what ggufConfigJSON runs on the mapped file; the fuzzer's
/// entry).
bool ggufConfigJSONFromBytes(const uint8_t *data, size_t size,
                             const std::string &path, std::string &json,
                             std::vector<std::string> &unread,
                             std::string &error);

/// GGUF file `path`'s chat template (tokenizer.chat_template) and the
/// texts of its BOS and EOS tokens (tokenizer.ggml.bos_token_id and
/// eos_token_id in tokenizer.ggml.tokens; "" where the file names none);
/// false with `error` where the file has no template or is malformed.
bool ggufChatTemplate(const std::string &path, std::string &tmpl,
                      std::string &bos, std::string &eos, std::string &error);

} // namespace arch

#endif // ARCHC_IMPORT_GGUFCONFIG_H
