# cmake -DIN=x.bc -DOUT=X.cpp -DNAME=kXBitcode -DFROM=source -P EmbedBitcode.cmake:
# writes IN's bytes as arch::NAME and its size as arch::NAMESize
# (lowering/Ukernels.h).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "// Generated from ${FROM} by EmbedBitcode.cmake.
#include \"lowering/Ukernels.h\"
namespace arch {
const unsigned char ${NAME}[] = {${bytes}};
const size_t ${NAME}Size = sizeof(${NAME});
} // namespace arch
")
