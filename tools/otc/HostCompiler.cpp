#include "HostCompiler.h"

#include "../../runtime/SafeFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace otc {
namespace {

using Args = std::vector<std::string>;

bool writeFile(const std::string &path, const std::string &text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  bool ok = writeAll(fd, text.data(), text.size());
  return close(fd) == 0 && ok;
}

bool readFile(const std::string &path, std::string &out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[1 << 16];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    out.append(buf, size_t(n));
  close(fd);
  return n == 0;
}

/// Runs `argv` without a shell, returning its combined output in `log`.
bool runCommand(const Args &argv, std::string &log) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0)
    return false;
  std::vector<char *> cargv;
  for (const std::string &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "cannot run '%s': %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  close(pipefd[1]);
  if (pid < 0) {
    close(pipefd[0]);
    return false;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0 && log.size() < (1 << 20))
      log.append(buf, size_t(n));
  close(pipefd[0]);
  int status = 0;
  pid_t done;
  while ((done = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  return done == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Args words(const std::string &text) {
  std::istringstream in(text);
  Args out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

/// `name` from the environment split on whitespace, or `fallback`.
Args envWords(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return words(v ? v : fallback);
}

/// Whether the precompiled header `file` is newer than every file it was
/// made from, as its dependency file (make syntax) lists them.
bool upToDate(const std::filesystem::path &file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_time_type built = fs::last_write_time(file, ec);
  std::string deps;
  if (ec || !readFile(file.string() + ".d", deps))
    return false;
  Args names = words(deps);
  if (names.empty() || names[0].back() != ':')
    return false;
  for (size_t i = 1; i < names.size(); ++i) {
    if (names[i] == "\\")
      continue;
    fs::file_time_type t = fs::last_write_time(names[i], ec);
    if (ec || t > built)
      return false; // a name with a space (escaped) fails here too: safe
  }
  return true;
}

/// The arguments that make the host compiler read the CPU step's
/// precompiled header (runtime/CMakeLists.txt), or none. Only for the
/// build's own compiler with exactly a variant's flags, and only while the
/// file is newer than everything it was made from: a header edited since
/// the build is read as text, never from a stale copy. (A compile that
/// fails with it is tried again without: clang refuses a PCH from another
/// CPU or compiler release, where GCC reads the header.)
Args precompiledHeader(const std::string &cxx, const Args &flags) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string suffix = OTC_STEP_PCH_SUFFIX; // gch, pch, or none built
  if (suffix.empty() || cxx != OTC_DEFAULT_CXX || !fs::is_directory(OTC_STEP_PCH_DIR, ec))
    return {};
  for (const fs::directory_entry &variant : fs::directory_iterator(OTC_STEP_PCH_DIR, ec)) {
    std::string text;
    if (!readFile(variant.path() / "flags", text) || words(text) != flags)
      continue;
    // GCC finds the .gch beside the header's name on the include path (and
    // reads the header itself if the .gch does not fit the target); clang
    // is given the file.
    std::string file = (variant.path() / "otc/runtime/cpu_step.h.").string() + suffix;
    if (!upToDate(file))
      return {};
    if (suffix == "gch")
      return {"-I", variant.path().string()};
    return {"-include-pch", file};
  }
  return {};
}

/// The first lines of a compiler's output, each shortened; the rest stays
/// in the log file.
std::string firstLines(const std::string &log, int lines) {
  std::istringstream in(log);
  std::string out;
  for (std::string line; lines-- > 0 && std::getline(in, line);)
    out += (out.empty() ? "" : "\n") + line.substr(0, 200);
  return out;
}

/// Removes the scratch folder's files (otc wrote all of them) and, unless
/// the sources are kept for a bug report, the folder itself.
void removeScratch(const std::string &dir, bool keepSources) {
  for (const char *f : {"model.onnx", "model.o", "train"})
    unlink((dir + "/" + f).c_str());
  if (keepSources)
    return;
  for (const char *f : {"model.S", "step.cpp", "step.cu", "build.log"})
    unlink((dir + "/" + f).c_str());
  rmdir(dir.c_str());
}

/// The step's source with the evaluation function's appended in a namespace
/// of its own: one translation unit (nvcc's cost is mostly per unit). The
/// evaluation source's #include lines move to the top level, where include
/// guards make the step's copies no-ops; its getter, extern "C", keeps its
/// name.
std::string withEvaluation(const std::string &step, const std::string &eval) {
  if (eval.empty())
    return step;
  std::string includes, body;
  size_t at = 0;
  while (at < eval.size()) {
    size_t end = eval.find('\n', at);
    end = end == std::string::npos ? eval.size() : end + 1;
    std::string line = eval.substr(at, end - at);
    (line.rfind("#include", 0) == 0 ? includes : body) += line;
    at = end;
  }
  return step + "\n// The evaluation function (--eval-data).\n" + includes +
         "namespace otc_eval {\n" + body + "} // namespace otc_eval\n";
}

std::string envOr(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return v && *v ? v : fallback;
}

void append(Args &to, const Args &from) { to.insert(to.end(), from.begin(), from.end()); }

std::string commandText(const Args &argv) {
  std::string s;
  for (const std::string &a : argv)
    s += (s.empty() ? "" : " ") + a;
  return s;
}

} // namespace

bool buildExecutable(const std::string &source, const std::string &evalSource,
                     const std::string &model,
                     Target target, ExecutableKind kind, bool dataParallel,
                     const std::string &output, std::string &error) {
  bool cuda = target == Target::Cuda;
  if (cuda && !OTC_CUDA_ENABLED) {
    error = "this otc was built without CUDA; use --target cpu";
    return false;
  }
  if (dataParallel && !OTC_MPI_ENABLED) {
    error = "--data-parallel: this otc was built without MPI (install libopenmpi-dev and build "
            "otc again)";
    return false;
  }
  if (dataParallel && cuda && std::string(OTC_NCCL_LINK).empty()) {
    error = "--data-parallel: this otc was built without NCCL, the CUDA target's collectives";
    return false;
  }
  // $TMPDIR when its name needs no escaping in the assembler's .incbin.
  std::string tmp = envOr("TMPDIR", "/tmp");
  if (tmp.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                            "0123456789_./-") != std::string::npos)
    tmp = "/tmp";
  std::string dir = tmp + "/otc-build-XXXXXX";
  if (!mkdtemp(&dir[0])) {
    error = "cannot create a scratch directory in " + tmp;
    return false;
  }
  std::string stepFile = dir + (cuda ? "/step.cu" : "/step.cpp");
  std::string exe = dir + "/train";
  // The model travels inside the executable, read back by the runtime. It
  // is copied into the scratch folder, whose name needs no escaping.
  std::string blob = "  .section .rodata\n  .global otc_model_begin\n"
                     "  .global otc_model_end\n  .balign 16\notc_model_begin:\n"
                     "  .incbin \"" + dir + "/model.onnx\"\notc_model_end:\n"
                     "  .byte 0\n  .section .note.GNU-stack,\"\",@progbits\n";

  // The compilers and flags: OTC_CXX, OTC_CXXFLAGS, OTC_NVCC, OTC_NVCC_FLAGS
  // and OTC_LDFLAGS override the defaults. The flags the runtime library was
  // built with (sanitizers) are always added: it cannot link without them.
  std::string cxx = envOr("OTC_CXX", OTC_DEFAULT_CXX);
  Args runtimeFlags = words(OTC_RUNTIME_FLAGS);
  Args ldflags = envWords("OTC_LDFLAGS", "");
  const char *libName = kind == ExecutableKind::Train     ? "/libotc_runtime_"
                        : kind == ExecutableKind::Forward ? "/libotc_forward_"
                                                          : "/libotc_function_";
  std::string lib = std::string(OTC_LIB_DIR) + libName + (cuda ? "cuda.a" : "cpu.a");
  Args assemble = {cxx, "-c", dir + "/model.S", "-o", dir + "/model.o"};
  Args link, pch;
  if (cuda) {
    link = {envOr("OTC_NVCC", OTC_NVCC), "-std=c++20"};
    append(link, envWords("OTC_NVCC_FLAGS", "-O2 -arch=sm_90"));
    append(link, {"-I", OTC_RUNTIME_INCLUDE_DIR, stepFile, dir + "/model.o", lib});
    // cuDNN's attention, where otc was built with it: the archive's object
    // is linked when the step calls it, and opens libcudnn.so.9 itself.
    if (Args cudnn = words(OTC_CUDNN_LINK); !cudnn.empty())
      append(link, {"-DOTC_HAVE_CUDNN", cudnn[0], "-ldl"});
    append(link, {"-lcublasLt", "-lcublas", "-lonnx_proto", "-lprotobuf"});
  } else {
    link = {cxx, "-std=c++20"};
    // The default and the fixed flags, and why: CMakeLists.txt.
    Args flags = envWords("OTC_CXXFLAGS", OTC_DEFAULT_STEP_CXXFLAGS);
    append(link, flags);
    append(link, words(OTC_STEP_FIXED_CXXFLAGS));
    append(link, runtimeFlags);
    link.push_back("-fopenmp");
    // Link flags reach the compile too (one command): any may change it.
    if (ldflags.empty())
      pch = precompiledHeader(cxx, flags);
    append(link, pch);
    append(link, {"-I", OTC_RUNTIME_INCLUDE_DIR, stepFile, dir + "/model.o",
                  lib, "-lopenblas", "-lonnx_proto", "-lprotobuf", "-lpthread"});
  }
  if (dataParallel) { // whole: the runtime reaches joinGroup by a weak reference
    // One linker argument, so that nvcc keeps the three in order.
    append(link, {std::string(cuda ? "-Xlinker=" : "-Wl,") + "--whole-archive," + OTC_LIB_DIR +
                  (cuda ? "/libotc_collective_nccl.a" : "/libotc_collective_mpi.a") +
                  ",--no-whole-archive"});
    append(link, words(OTC_MPI_LINK));
    if (cuda)
      append(link, words(OTC_NCCL_LINK));
  }
  append(link, ldflags);
  append(link, {"-o", exe});

  std::string log, bytes;
  bool compileFailed = false;
  // A failed compile with the precompiled header is tried once without it;
  // the log then holds the second try's output alone.
  auto withoutPch = [&] {
    if (pch.empty())
      return false;
    auto at = std::search(link.begin(), link.end(), pch.begin(), pch.end());
    link.erase(at, at + pch.size());
    pch.clear();
    log.clear();
    return runCommand(link, log);
  };
  std::fprintf(stderr, "otc: building %s with %s%s\n", output.c_str(), link[0].c_str(),
               pch.empty() ? "" : " (precompiled runtime header)");
  bool ok = writeFile(stepFile, withEvaluation(source, evalSource)) &&
            writeFile(dir + "/model.S", blob) &&
            writeFile(dir + "/model.onnx", model);
  if (!ok)
    error = "cannot write the generated source to " + dir;
  else if (!(ok = runCommand(assemble, log) && (runCommand(link, log) || withoutPch()))) {
    compileFailed = true;
    writeFile(dir + "/build.log", commandText(link) + "\n" + log);
    error = std::string(cuda ? "nvcc" : "the host compiler") +
            " failed on the generated code (all in " + dir + "/build.log):\n" +
            firstLines(log, 5);
  }
  else if (!(ok = readFile(exe, bytes)))
    error = "cannot read the built executable in " + dir;
  else
    ok = replaceFile(output, 0777,
                     [&](int fd) { return writeAll(fd, bytes.data(), bytes.size()); },
                     error);
  // A failed build keeps its source and log for the bug report, never the
  // (possibly large) model copy.
  removeScratch(dir, compileFailed);
  return ok;
}

} // namespace otc
