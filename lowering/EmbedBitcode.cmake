# cmake -DIN=ukernels.bc -DOUT=UkernelBitcode.cpp -P EmbedBitcode.cmake:
# writes IN's bytes as arch::kUkernelBitcode (lowering/Ukernels.h).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "// Generated from lowering/ukernels.ll by EmbedBitcode.cmake.
#include \"lowering/Ukernels.h\"
namespace arch {
const unsigned char kUkernelBitcode[] = {${bytes}};
const size_t kUkernelBitcodeSize = sizeof(kUkernelBitcode);
} // namespace arch
")
