#include "Driver.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace otc {
namespace {

std::string quote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  return bool(out << text) && bool(out.flush());
}

/// Runs `command`, returning its combined output in `log`.
bool runCommand(const std::string &command, std::string &log) {
  std::FILE *p = popen((command + " 2>&1").c_str(), "r");
  if (!p)
    return false;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    log.append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string absolute(const std::string &path) {
  char *real = realpath(path.c_str(), nullptr);
  std::string out = real ? real : path;
  std::free(real);
  return out;
}

} // namespace

bool buildExecutable(const std::string &source, const std::string &modelPath,
                     Target target, const std::string &output,
                     std::string &error) {
  bool cuda = target == Target::Cuda;
  if (cuda && !OTC_CUDA_ENABLED) {
    error = "this otc was built without CUDA; use --target cpu";
    return false;
  }
  char dirTemplate[] = "/tmp/otc-build-XXXXXX";
  if (!mkdtemp(dirTemplate)) {
    error = "cannot create a scratch directory";
    return false;
  }
  std::string dir = dirTemplate;
  std::string stepFile = dir + (cuda ? "/step.cu" : "/step.cpp");
  // The model travels inside the executable, read back by the runtime.
  std::string blob = "  .section .rodata\n  .global otc_model_begin\n"
                     "  .global otc_model_end\n  .balign 16\notc_model_begin:\n"
                     "  .incbin \"" + absolute(modelPath) + "\"\notc_model_end:\n"
                     "  .byte 0\n  .section .note.GNU-stack,\"\",@progbits\n";
  std::string tmpOut = output + ".tmp." + std::to_string(getpid());
  std::string include = " -I" + quote(OTC_RUNTIME_INCLUDE_DIR);
  std::string lib = std::string(OTC_LIB_DIR) + (cuda ? "/libotc_runtime_cuda.a" : "/libotc_runtime_cpu.a");
  std::string command =
      "cc -c " + quote(dir + "/model.S") + " -o " + quote(dir + "/model.o") + " && ";
  if (cuda)
    command += quote(OTC_NVCC) + " -O2 -std=c++17 -arch=sm_90" + include + " " +
               quote(stepFile) + " " + quote(dir + "/model.o") + " " + quote(lib) +
               " -lcublas -lonnx_proto -lprotobuf -o " + quote(tmpOut);
  else
    command += "c++ -O2 -std=c++17" + include + " " + quote(stepFile) + " " +
               quote(dir + "/model.o") + " " + quote(lib) +
               " -lopenblas -lonnx_proto -lprotobuf -lpthread -o " + quote(tmpOut);

  std::string log;
  std::fprintf(stderr, "otc: building %s with %s\n", output.c_str(), cuda ? "nvcc" : "c++");
  bool ok = writeFile(stepFile, source) && writeFile(dir + "/model.S", blob);
  if (!ok)
    error = "cannot write the generated source to " + dir;
  else if (!(ok = runCommand(command, log)))
    error = std::string(cuda ? "nvcc" : "the host compiler") +
            " failed on the generated code (kept in " + dir + "):\n" + log;
  else if (!(ok = std::rename(tmpOut.c_str(), output.c_str()) == 0))
    error = "cannot write '" + output + "'";
  if (!ok)
    std::remove(tmpOut.c_str());
  else
    runCommand("rm -rf " + quote(dir), log);
  return ok;
}

} // namespace otc
