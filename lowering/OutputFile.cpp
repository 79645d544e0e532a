//===- OutputFile.cpp - Files written whole, or not at all ----------------===//
#include "lowering/OutputFile.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace arch {
namespace fs = std::filesystem;

namespace {

/// Writes all of `n` bytes at `p` to `fd`.
bool writeAll(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w == 0)
      errno = EIO;
    if (w <= 0)
      return false;
    p += w, n -= size_t(w);
  }
  return true;
}

/// Writes `text`, or the bytes of file `from`, to `fd`.
bool writeContents(int fd, const std::string *text, const std::string &from) {
  if (text)
    return writeAll(fd, text->data(), text->size());
  int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return false;
  char buf[1 << 16];
  bool ok = true;
  for (;;) {
    ssize_t r = read(in, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      ok = r == 0;
      break;
    }
    if (!writeAll(fd, buf, size_t(r))) {
      ok = false;
      break;
    }
  }
  int saved = errno;
  close(in);
  errno = saved;
  return ok;
}

std::string failure(const std::string &path, int err) {
  return "cannot write " + path + ": " + std::strerror(err);
}

/// The descriptor `path` names (/dev/stdout, /dev/stderr, /dev/fd/N,
/// /proc/self/fd/N), or -1: such a path reopened would be a new file
/// description (a shell's `>> log` written from its start) and, renamed
/// over, the file behind it replaced.
int namedDescriptor(const std::string &path) {
  if (path == "/dev/stdout")
    return 1;
  if (path == "/dev/stderr")
    return 2;
  for (const char *dir : {"/dev/fd/", "/proc/self/fd/"}) {
    size_t n = strlen(dir);
    if (path.compare(0, n, dir) != 0 || path.size() == n ||
        path.size() > n + 9)
      continue;
    int fd = 0;
    for (size_t i = n; i < path.size(); ++i) {
      if (!std::isdigit((unsigned char)path[i]))
        return -1;
      fd = fd * 10 + (path[i] - '0');
    }
    return fd;
  }
  return -1;
}

/// The process's umask (read by setting it back).
mode_t currentUmask() {
  mode_t m = umask(022);
  umask(m);
  return m;
}

} // namespace

bool putFile(const std::string &path, const std::string *text,
             const std::string &from, unsigned mode, std::string &error) {
  struct stat st;
  bool exists = stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    error = failure(path, EISDIR);
    return false;
  }
  if (int fd = namedDescriptor(path); fd >= 0) {
    bool ok = writeContents(fd, text, from);
    if (!ok)
      error = failure(path, errno);
    return ok;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && writeContents(fd, text, from);
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && ok)
      ok = false, err = errno;
    if (!ok)
      error = failure(path, err);
    return ok;
  }
  // The target behind any symlinks (a dangling link is replaced itself).
  std::string target = path;
  if (exists) {
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);
    if (!ec)
      target = real.string();
  }
  std::string part = target + ".XXXXXX";
  int fd = mkstemp(part.data());
  if (fd < 0) {
    error = failure(path, errno);
    return false;
  }
  // (Best effort: a file system without modes, vfat, refuses the change.)
  mode_t want = exists ? st.st_mode & 07777 : mode_t(mode) & ~currentUmask();
  (void)fchmod(fd, want);
  bool ok = writeContents(fd, text, from);
  int err = errno;
  if (close(fd) != 0 && ok)
    ok = false, err = errno;
  if (ok && rename(part.c_str(), target.c_str()) != 0)
    ok = false, err = errno;
  if (!ok) {
    unlink(part.c_str());
    error = failure(path, err);
  }
  return ok;
}

bool checkOutputPath(const std::string &path, std::string &error) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      error = failure(path, EISDIR);
      return false;
    }
    if (!S_ISREG(st.st_mode) || namedDescriptor(path) >= 0)
      return true;
  }
  std::error_code ec;
  fs::path real = fs::weakly_canonical(path, ec);
  fs::path dir = (ec ? fs::path(path) : real).parent_path();
  if (dir.empty())
    dir = ".";
  if (stat(dir.c_str(), &st) != 0) {
    error = failure(path, errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    error = failure(path, ENOTDIR);
    return false;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    error = failure(path, errno);
    return false;
  }
  return true;
}

std::string tempTemplate(const std::string &name) {
  const char *dir = getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/" + name + "-XXXXXX";
}

} // namespace arch
