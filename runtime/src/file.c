/*===- file.c - Opening input files without blocking ----------------------===*
 *
 * Weights, shards, indexes and tokenizers are regular files. A FIFO, a
 * socket or a device given in their place must be an error, not a process
 * that blocks forever in open(): O_NONBLOCK makes the open return at once,
 * and fstat decides before anything is read.
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

archrt_status archrt_open_file(const char *path, int *fd_out, size_t *size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return archrt_fail(ARCHRT_ERR_IO, "%s: not a regular file", path);
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0)
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *fd_out = fd;
  *size = (size_t)st.st_size;
  return ARCHRT_OK;
}

archrt_status archrt_map_file(const char *path, archrt_mapping *out) {
  int fd;
  archrt_status st = archrt_open_file(path, &fd, &out->size);
  if (st)
    return st;
  if (out->size == 0) {
    close(fd);
    return archrt_fail(ARCHRT_ERR_FORMAT, "%s: file is empty", path);
  }
  out->data = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (out->data == MAP_FAILED)
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot map: %s", path,
                       strerror(errno));
  return ARCHRT_OK;
}
