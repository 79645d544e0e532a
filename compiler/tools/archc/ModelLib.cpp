//===- ModelLib.cpp - A compiled model library, opened with dlopen --------===//
#include "ModelLib.h"

#include <dlfcn.h>

namespace arch {

bool ModelLib::open(const std::string &path, std::string &error) {
  std::string p = path.find('/') == std::string::npos ? "./" + path : path;
  handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = std::string("cannot load model library: ") + dlerror();
    return false;
  }
#define ARCHRT_FN(name)                                                        \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, #name));               \
  if (!name) {                                                                 \
    error = path + ": not an archc model library (no " #name ")";              \
    return false;                                                              \
  }
#include "ModelLibFns.def"
  if (archrt_abi_version() != ARCHRT_ABI_VERSION) {
    error = path + ": built for archrt ABI " +
            std::to_string(archrt_abi_version()) + ", this archc speaks " +
            std::to_string(ARCHRT_ABI_VERSION);
    return false;
  }
  return true;
}

ModelLib::~ModelLib() {
  if (handle)
    dlclose(handle);
}

} // namespace arch
