/*===- alloc.h - Bench buffers, allocated as the runtime allocates ------===*/
#ifndef ARCHC_BENCH_ALLOC_H
#define ARCHC_BENCH_ALLOC_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

/* `bytes` as the runtime allocates weights and KV caches
 * (archrt_alloc_floats): from 2 MiB up on transparent huge pages (THP
 * "madvise"), 64-byte aligned below, so that a kernel timed alone reads
 * its buffers on the pages it reads them on in a model. Exits naming
 * `tool` when memory runs out. */
static inline void *bench_alloc(size_t bytes, const char *tool) {
  size_t huge = (size_t)2 << 20, align = bytes >= huge ? huge : 64;
  size_t size = (bytes + align - 1) / align * align;
  void *p = aligned_alloc(align, size);
  if (!p) {
    fprintf(stderr, "%s: out of memory\n", tool);
    exit(1);
  }
  if (align == huge)
    madvise(p, size, MADV_HUGEPAGE);
  return p;
}

#endif
