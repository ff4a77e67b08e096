#pragma once
// Runs the real `mapex` binary for end-to-end tests and captures its exit
// status, standard output and standard error.

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace mapex::test {

struct CliResult {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes `text` to `name` in the tests' work folder; returns its path.
inline std::string write_work_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(MAPEX_TEST_WORK_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

/// `env` entries are NAME=value, set for this command only.
inline CliResult run_cli(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {},
                         const std::string& binary = MAPEX_BINARY) {
  static int counter = 0;
  const std::string base = std::string(MAPEX_TEST_WORK_DIR) + "/cli_" + std::to_string(::getpid()) +
                           "_" + std::to_string(counter++);
  std::string command;
  for (const auto& e : env) command += e + " ";
  command += shell_quote(binary);
  for (const auto& a : args) command += " " + shell_quote(a);
  command += " >" + shell_quote(base + ".out") + " 2>" + shell_quote(base + ".err") + " </dev/null";
  const int raw = std::system(command.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

}  // namespace mapex::test
