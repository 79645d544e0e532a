//===- OutputFile.cpp - Files written whole, or not at all ----------------===//
#include "lowering/OutputFile.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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
  std::unique_ptr<TempOnSignal> guard;
  int fd = makeTempFile(part, &guard);
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

// ---- Temporaries removed on a signal ----------------------------------------
//
// The handler may run on any thread, beside others that register and forget
// temporaries: each slot is a seqlock (odd while its path is written), and
// the handler copies a path and uses it only where the sequence did not
// move meanwhile. Only async-signal-safe calls run in the handler: nanosleep,
// kill, waitpid, openat, getdents64, lseek, unlinkat, close, sigaction,
// raise. A thread that would end archc otherwise while a handler runs (its
// child killed, or main returning) parks instead (parkIfSignalled), so that
// archc ends by the signal, its temporaries gone.

namespace {

constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;

struct SignalSlot {
  std::atomic<unsigned> seq{0};  // odd: being written
  std::atomic<bool> live{false}; // a path to remove
  char path[kPathMax];
};
static_assert(std::atomic<unsigned>::is_always_lock_free &&
                  std::atomic<bool>::is_always_lock_free &&
                  std::atomic<int>::is_always_lock_free,
              "the signal handler's atomics must be lock-free");

SignalSlot slots[kSlots];
std::atomic<int> childPid{0};
std::atomic<bool> ending{false};
const int handledSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
thread_local sigset_t heldFrom;

/// Removes `name` under `dirfd`: a file, or a directory and what it holds
/// (to a depth of 8); whether it is gone.
bool removeTree(int dirfd, const char *name, int depth) {
  if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
    return true;
  if (depth > 8)
    return false;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return false;
  // Read from the start again after each pass that removed something
  // (removing entries while reading may skip others); an entry that cannot
  // be removed ends the passes.
  for (bool removed = true; removed;) {
    alignas(8) char buf[2048];
    removed = false;
    lseek(fd, 0, SEEK_SET);
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
      for (long at = 0; at < n;) {
        // struct linux_dirent64: ino (8), off (8), reclen (2), type (1),
        // name.
        unsigned short reclen;
        memcpy(&reclen, buf + at + 16, sizeof reclen);
        const char *entry = buf + at + 19;
        if (strcmp(entry, ".") && strcmp(entry, "..") &&
            removeTree(fd, entry, depth + 1))
          removed = true;
        at += reclen;
      }
  }
  close(fd);
  return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT;
}

void onSignal(int sig) {
  int saved = errno;
  ending.store(true);
  // A child being started (-1) is waited for, up to 5 s. The child leads
  // its own process group: the group goes (a driver's cc1, as, ld).
  for (int i = 0; i < 5000 && childPid.load() < 0; ++i) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, nullptr);
  }
  if (int pid = childPid.load(); pid > 0) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
  }
  for (SignalSlot &s : slots) {
    unsigned before = s.seq.load();
    if (before & 1 || !s.live.load())
      continue;
    char path[kPathMax];
    memcpy(path, s.path, kPathMax);
    path[kPathMax - 1] = 0;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load() == before && s.live.load())
      removeTree(AT_FDCWD, path, 0);
  }
  // End as the signal would have: its default action, raised again.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  errno = saved;
  raise(sig);
}

} // namespace

void parkIfSignalled() {
  while (ending.load())
    pause();
}

void removeTempsOnSignal() {
  for (int sig : handledSignals) {
    struct sigaction old = {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN)
      continue;
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    for (int other : handledSignals)
      sigaddset(&sa.sa_mask, other);
    sigaction(sig, &sa, nullptr);
  }
  // main returning (or exit) while a handler runs on another thread.
  atexit(parkIfSignalled);
}

void holdSignals() {
  sigset_t held;
  sigemptyset(&held);
  for (int sig : handledSignals)
    sigaddset(&held, sig);
  pthread_sigmask(SIG_BLOCK, &held, &heldFrom);
}

void releaseSignals() { pthread_sigmask(SIG_SETMASK, &heldFrom, nullptr); }

const sigset_t &maskBeforeHold() { return heldFrom; }

int makeTempFile(std::string &tmpl, std::unique_ptr<TempOnSignal> *guard) {
  holdSignals();
  int fd = mkstemp(tmpl.data());
  int err = errno;
  if (fd >= 0 && guard)
    *guard = std::make_unique<TempOnSignal>(tmpl);
  releaseSignals();
  errno = err;
  return fd;
}

bool makeTempDir(std::string &tmpl, std::unique_ptr<TempOnSignal> *guard) {
  holdSignals();
  bool made = mkdtemp(tmpl.data()) != nullptr;
  int err = errno;
  if (made && guard)
    *guard = std::make_unique<TempOnSignal>(tmpl);
  releaseSignals();
  errno = err;
  return made;
}

TempOnSignal::TempOnSignal(const std::string &path) : slot(-1) {
  if (path.empty() || path.size() >= kPathMax)
    return;
  // An absolute path: the handler may run after a chdir.
  std::error_code ec;
  std::string abs = fs::absolute(path, ec).string();
  if (ec || abs.size() >= kPathMax)
    return;
  for (int i = 0; i < kSlots; ++i) {
    unsigned seq = slots[i].seq.load();
    if (seq & 1 || slots[i].live.load() ||
        !slots[i].seq.compare_exchange_strong(seq, seq + 1))
      continue;
    memcpy(slots[i].path, abs.c_str(), abs.size() + 1);
    slots[i].live.store(true);
    slots[i].seq.store(seq + 2);
    slot = i;
    return;
  }
}

TempOnSignal::~TempOnSignal() {
  if (slot >= 0)
    slots[slot].live.store(false);
}

void setChildOnSignal(int pid) { childPid.store(pid); }

std::string tempTemplate(const std::string &name) {
  const char *dir = getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/" + name + "-XXXXXX";
}

} // namespace arch
