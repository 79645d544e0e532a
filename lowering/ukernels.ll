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
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

declare void @llvm.prefetch.p0i8(i8* nocapture readonly, i32 immarg, i32 immarg, i32 immarg)

define weak_odr hidden i32 @archu_prefetch_read(i8* %base, i64 %offset) alwaysinline nounwind {
  %line = getelementptr i8, i8* %base, i64 %offset
  call void @llvm.prefetch.p0i8(i8* %line, i32 0, i32 3, i32 1)
  ret i32 0
}
