; ukernels.ll - instructions Halide 14 cannot express, for its x86-64 kernels
;
; LLVM functions that archc links into a kernel's Halide module
; (Halide::ExternalCode) where its schedule calls them, inlined there.
; Assembled into bitcode by llvm-as-14 at build time: Halide 14 runs LLVM
; 14, which reads no newer bitcode. The data layout is Halide's for
; x86-64, so that linking warns of nothing.
;
; archu_prefetch_read(base, offset): prefetch for reading, into every cache
; level, the line at byte `offset` from `base` (prefetcht0), returning 0 (a
; Halide call has a value). Halide 14's own prefetch directive emits
; prefetchnta, which on the Xeon took a 4-stream read from 15 to 5-7 GB/s
; and prefill from 428 to 127 tok/s (docs/performance.md). weak_odr keeps
; the definition through the link into each kernel's module (a linkonce
; one would be dropped before anything calls it); hidden keeps it out of
; the library's symbols.
;
; archu_f16_f32(h) and its vectors archu_f16_f32x4, x8, x16: an f16 (its
; bits) to f32, exactly (subnormals and infinities too; a signalling NaN
; comes out quiet). Halide 14 emulates the conversion in about fifteen
; integer instructions a vector even where the target has F16C; LLVM
; emits one vcvtph2ps, which takes its operand from memory. Halide calls
; fooxN for a vector of N lanes of a pure extern foo where the module
; defines it (two x16 for 32 lanes). Called only for targets whose Halide
; feature list names f16c (KernelFuncs::f16c, set in HalideEmitter.cpp's
; build(); "host" does on any CPU with F16C): without it LLVM would call
; a runtime conversion. They are compiled without AVX512-FP16
; ("-avx512fp16"): every kernel that calls a ukernel links them, and under
; avx512_sapphirerapids (a bf16 kernel's target) LLVM would otherwise
; make their unused bodies vcvtph2psx, an instruction of a CPU with
; AVX512-FP16 (which compileKernelObject then refuses on one without, and
; builds the kernel again without the bf16 dot product). Inlined into a
; kernel they take its features: under avx512_sapphirerapids that is
; vcvtph2psx again, and such a kernel (bf16 tiles over an f16 cache) is
; built again without the feature on a CPU without AVX512-FP16.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.prefetch.p0i8(i8* nocapture readonly, i32 immarg, i32 immarg, i32 immarg)

define weak_odr hidden i32 @archu_prefetch_read(i8* %base, i64 %offset) alwaysinline nounwind {
  %line = getelementptr i8, i8* %base, i64 %offset
  call void @llvm.prefetch.p0i8(i8* %line, i32 0, i32 3, i32 1)
  ret i32 0
}

define weak_odr hidden float @archu_f16_f32(i16 %h) alwaysinline nounwind readnone "target-features"="-avx512fp16" {
  %x = bitcast i16 %h to half
  %f = fpext half %x to float
  ret float %f
}

define weak_odr hidden <4 x float> @archu_f16_f32x4(<4 x i16> %h) alwaysinline nounwind readnone "target-features"="-avx512fp16" {
  %x = bitcast <4 x i16> %h to <4 x half>
  %f = fpext <4 x half> %x to <4 x float>
  ret <4 x float> %f
}

define weak_odr hidden <8 x float> @archu_f16_f32x8(<8 x i16> %h) alwaysinline nounwind readnone "target-features"="-avx512fp16" {
  %x = bitcast <8 x i16> %h to <8 x half>
  %f = fpext <8 x half> %x to <8 x float>
  ret <8 x float> %f
}

define weak_odr hidden <16 x float> @archu_f16_f32x16(<16 x i16> %h) alwaysinline nounwind readnone "target-features"="-avx512fp16" {
  %x = bitcast <16 x i16> %h to <16 x half>
  %f = fpext <16 x half> %x to <16 x float>
  ret <16 x float> %f
}
