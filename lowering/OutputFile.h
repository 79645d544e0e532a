//===- OutputFile.h - Files written whole, or not at all -------*- C++ -*-===//
//
// Every file archc writes for a user (-o of compile and import-hf,
// --dump-ir's stages) and every entry of its kernel cache goes through
// putFile: where archc fails, the path keeps what it held; where it
// succeeds, it holds the new bytes whole (no fsync: a power loss may leave
// either).
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_OUTPUTFILE_H
#define ARCHC_LOWERING_OUTPUTFILE_H

#include <csignal>
#include <memory>
#include <string>

namespace arch {

/// Puts `text` (or, where null, the bytes of file `from`) at `path`.
/// - A path that is (after its symlinks) a regular file, or nothing yet,
///   gets a temporary beside its target, with a name of its own (two
///   writers never share one), renamed into place: a failure leaves no
///   partial file and the old one as it was. A symlink's target is
///   replaced; the link stays (a hard link does not: the path gets a new
///   file). A new file's mode is `mode` less the umask; a replaced file
///   keeps its own (both where the file system keeps modes).
/// - A device or pipe (/dev/null, a named pipe) is written in place:
///   renaming over it would replace the device. A path that names one of
///   archc's descriptors (/dev/stdout, /dev/stderr, /dev/fd/N,
///   /proc/self/fd/N) is written to that descriptor, as "-" is to stdout
///   (a shell's `>> log` appended to).
/// - A directory is an error.
/// On failure `error` reads "cannot write PATH: why".
bool putFile(const std::string &path, const std::string *text,
             const std::string &from, unsigned mode, std::string &error);

/// Whether `path` can be written as putFile writes it, checked before work
/// that ends in writing it: its directory exists and is writable (or the
/// path is a device, pipe or socket); otherwise `error` says why.
bool checkOutputPath(const std::string &path, std::string &error);

/// A template for mkdtemp or mkstemp under $TMPDIR (else /tmp):
/// "DIR/NAME-XXXXXX".
std::string tempTemplate(const std::string &name);

/// Installs the handlers that clean up when SIGINT, SIGTERM, SIGHUP or
/// SIGQUIT ends archc (its main calls it first; a signal ignored at start,
/// as under nohup, stays ignored): the running child (a compiler, the
/// linker) is killed and waited for, every live TempOnSignal's file or
/// directory tree is removed, and archc then ends by the same signal.
void removeTempsOnSignal();

/// Names a temporary file or directory tree for the signal handlers to
/// remove while it lives (the owner still removes it on its own paths).
/// Up to 64 live at once and paths below 4096 bytes; others are not
/// covered.
class TempOnSignal {
public:
  explicit TempOnSignal(const std::string &path);
  ~TempOnSignal();
  TempOnSignal(const TempOnSignal &) = delete;
  TempOnSignal &operator=(const TempOnSignal &) = delete;

private:
  int slot;
};

/// The child process the signal handlers kill before removing the
/// temporaries, with its process group (0: none; -1: one being started,
/// which they wait for). The caller starts it as the leader of a group of
/// its own.
void setChildOnSignal(int pid);

/// Parks the calling thread for good where a signal handler is ending
/// archc on another thread (so that archc ends by the signal, not by an
/// error or exit of this one); returns at once otherwise. Called where a
/// child's wait returns, and at exit.
void parkIfSignalled();

/// mkstemp and mkdtemp of `tmpl` (a tempTemplate), the result named to the
/// signal handlers in the same step (the signals held on this thread
/// meanwhile): `guard` gets its TempOnSignal where given and the file or
/// directory was made. mkstemp's descriptor (-1 with errno on failure);
/// whether mkdtemp made the directory (errno on failure).
int makeTempFile(std::string &tmpl, std::unique_ptr<TempOnSignal> *guard);
bool makeTempDir(std::string &tmpl, std::unique_ptr<TempOnSignal> *guard);

/// Holds the handled signals on this thread, and releases them; while
/// held, the mask as it was before (for a child's spawn attributes).
void holdSignals();
void releaseSignals();
const sigset_t &maskBeforeHold();

} // namespace arch

#endif // ARCHC_LOWERING_OUTPUTFILE_H
