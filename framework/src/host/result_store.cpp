#include "host/result_store.hpp"

#include <H5Cpp.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mapex/error.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace mapex::host {
namespace {

// Format 1's in-memory layout of a row. Strings are variable-length C
// strings.
struct RawRow {
  std::uint64_t job_index;
  const char* job_id;
  const char* workload;
  const char* layer;
  const char* architecture;
  const char* searcher;
  const char* costmodel;
  const char* objective;
  const char* status;
  const char* error;
  double latency_cycles;
  double energy_pj;
  double edp;
  double utilization;
  double macs;
  double roofline_peak_cycles;
  std::uint64_t evaluations;
  double wall_seconds;
  std::int32_t complete;
  const char* stop_reason;
  std::uint64_t seed;
  const char* best_mapping;
  const char* mapping_summary;
  std::int64_t num_pes;
  double area_mm2;
  double power_mw;
  double latency_seconds;
  double throughput_gmacs;
  std::int32_t pareto;
};

struct RawTrace {
  const char* job_id;
  std::uint64_t evaluation;
  double value;
};

H5::StrType utf8_string() {
  H5::StrType str(H5::PredType::C_S1, H5T_VARIABLE);
  str.setCset(H5T_CSET_UTF8);
  return str;
}

H5::CompType row_type() {
  const H5::StrType str = utf8_string();
  H5::CompType t(sizeof(RawRow));
#define MAPEX_MEMBER(name, type) t.insertMember(#name, offsetof(RawRow, name), type)
  MAPEX_MEMBER(job_index, H5::PredType::NATIVE_UINT64);
  MAPEX_MEMBER(job_id, str);
  MAPEX_MEMBER(workload, str);
  MAPEX_MEMBER(layer, str);
  MAPEX_MEMBER(architecture, str);
  MAPEX_MEMBER(searcher, str);
  MAPEX_MEMBER(costmodel, str);
  MAPEX_MEMBER(objective, str);
  MAPEX_MEMBER(status, str);
  MAPEX_MEMBER(error, str);
  MAPEX_MEMBER(latency_cycles, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(energy_pj, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(edp, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(utilization, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(macs, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(roofline_peak_cycles, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(evaluations, H5::PredType::NATIVE_UINT64);
  MAPEX_MEMBER(wall_seconds, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(complete, H5::PredType::NATIVE_INT32);
  MAPEX_MEMBER(stop_reason, str);
  MAPEX_MEMBER(seed, H5::PredType::NATIVE_UINT64);
  MAPEX_MEMBER(best_mapping, str);
  MAPEX_MEMBER(mapping_summary, str);
  MAPEX_MEMBER(num_pes, H5::PredType::NATIVE_INT64);
  MAPEX_MEMBER(area_mm2, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(power_mw, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(latency_seconds, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(throughput_gmacs, H5::PredType::NATIVE_DOUBLE);
  MAPEX_MEMBER(pareto, H5::PredType::NATIVE_INT32);
#undef MAPEX_MEMBER
  return t;
}

H5::CompType trace_type() {
  H5::CompType t(sizeof(RawTrace));
  t.insertMember("job_id", offsetof(RawTrace, job_id), utf8_string());
  t.insertMember("evaluation", offsetof(RawTrace, evaluation), H5::PredType::NATIVE_UINT64);
  t.insertMember("value", offsetof(RawTrace, value), H5::PredType::NATIVE_DOUBLE);
  return t;
}

template <typename T>
void write_scalar(H5::H5Object& object, const std::string& name, const H5::PredType& type,
                  T value) {
  H5::Attribute attr = object.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  attr.write(type, &value);
}

// Numbers as numbers (h5py gives an int or a float), text as
// variable-length UTF-8 (h5py gives a str). A value of a numeric attribute
// that does not read as one is kept as the text it is.
void write_attribute(H5::H5Object& object, const std::string& name, const std::string& value) {
  const AttributeType type = attribute_type(name);
  std::size_t used = 0;
  try {
    if (type == AttributeType::kInteger && !value.empty() && value[0] != '-') {
      const unsigned long long v = std::stoull(value, &used);
      if (used == value.size()) {
        if (v <= static_cast<unsigned long long>(INT64_MAX))
          write_scalar(object, name, H5::PredType::NATIVE_INT64, static_cast<std::int64_t>(v));
        else
          write_scalar(object, name, H5::PredType::NATIVE_UINT64, static_cast<std::uint64_t>(v));
        return;
      }
    }
    if (type == AttributeType::kReal) {
      const double v = std::stod(value, &used);
      if (used == value.size()) {
        write_scalar(object, name, H5::PredType::NATIVE_DOUBLE, v);
        return;
      }
    }
  } catch (const std::exception&) {
    // Out of range or not a number: kept as text.
  }
  const H5::StrType str = utf8_string();
  H5::Attribute attr = object.createAttribute(name, str, H5::DataSpace(H5S_SCALAR));
  const char* data = value.c_str();
  attr.write(str, &data);
}

template <typename T>
void write_numbers(H5::Group& group, const char* name, const H5::PredType& type,
                   const std::vector<T>& values) {
  const hsize_t n[1] = {values.size()};
  H5::DataSet set = group.createDataSet(name, type, H5::DataSpace(1, n));
  if (!values.empty()) set.write(values.data(), type);
}

void write_strings(H5::Group& group, const char* name, const std::vector<const char*>& values) {
  const H5::StrType str = utf8_string();
  const hsize_t n[1] = {values.size()};
  H5::DataSet set = group.createDataSet(name, str, H5::DataSpace(1, n));
  if (!values.empty()) set.write(values.data(), str);
}

// One dataset per column (README.md, Result files): h5py reads a string
// column as str with `.asstr()`, and a column carries its unit.
void write_job_column(H5::Group& jobs, const JobColumn& column, const std::vector<JobRow>& rows) {
  std::visit(
      [&](auto member) {
        using T = std::decay_t<decltype(std::declval<JobRow>().*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          std::vector<const char*> v;
          for (const auto& r : rows) v.push_back((r.*member).c_str());
          write_strings(jobs, column.name, v);
        } else {
          std::vector<T> v;
          for (const auto& r : rows) v.push_back(r.*member);
          const H5::PredType& type = std::is_same_v<T, double> ? H5::PredType::NATIVE_DOUBLE
                                     : std::is_same_v<T, std::uint64_t>
                                         ? H5::PredType::NATIVE_UINT64
                                     : std::is_same_v<T, std::int64_t> ? H5::PredType::NATIVE_INT64
                                                                       : H5::PredType::NATIVE_INT32;
          write_numbers(jobs, column.name, type, v);
        }
      },
      column.member);
  if (*column.units) {
    H5::DataSet set = jobs.openDataSet(column.name);
    write_attribute(set, "units", column.units);
  }
}

// The HDF5 part, built in memory (the core driver) with a user block of
// `userblock` bytes in front; returns the image without the user block.
std::string hdf5_image(const std::map<std::string, std::string>& attributes,
                       const std::vector<JobRow>& rows, hsize_t userblock) {
  H5::FileCreatPropList create;
  create.setUserblock(userblock);
  H5::FileAccPropList access;
  access.setCore(1 << 20, false);
  H5::H5File file("mapex-result-image", H5F_ACC_TRUNC, create, access);
  for (const auto& [name, value] : attributes) write_attribute(file, name, value);
  H5::Group jobs = file.createGroup("jobs");
  std::string order;
  for (const JobColumn& c : job_columns()) {
    write_job_column(jobs, c, rows);
    order += (order.empty() ? "" : ",") + std::string(c.name);
  }
  write_attribute(jobs, "columns", order);
  H5::Group traces = file.createGroup("traces");
  std::vector<const char*> ids;
  std::vector<std::uint64_t> evaluations;
  std::vector<double> values;
  for (const auto& r : rows)
    for (const auto& t : r.trace) {
      ids.push_back(r.job_id.c_str());
      evaluations.push_back(t.evaluation);
      values.push_back(t.value);
    }
  write_strings(traces, "job_id", ids);
  write_numbers(traces, "evaluation", H5::PredType::NATIVE_UINT64, evaluations);
  write_numbers(traces, "value", H5::PredType::NATIVE_DOUBLE, values);
  write_attribute(traces, "columns", "job_id,evaluation,value");
  file.flush(H5F_SCOPE_GLOBAL);
  const ssize_t size = H5Fget_file_image(file.getId(), nullptr, 0);
  if (size <= 0) throw H5::FileIException("H5Fget_file_image", "no image");
  std::string image(static_cast<std::size_t>(size), '\0');
  H5Fget_file_image(file.getId(), image.data(), image.size());
  // The core driver's image starts at the superblock (addresses are
  // relative to it); the user block is the journal, put in front later.
  if (image.compare(0, 4, "\x89HDF") != 0)
    throw H5::FileIException("H5Fget_file_image", "the image does not start with a superblock");
  return image;
}

// Writes `bytes` under another name and renames it over `path`: the path
// holds the old file or the new one, never a part of either.
void replace_file(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      throw InputError(SourceLocation{path, 0, 0}, "",
                       "cannot create the result file (check the directory exists and is "
                       "writable)");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw InputError(SourceLocation{path, 0, 0}, "", "cannot replace the result file: " + why);
  }
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path, 0, 0}, "", "cannot open the result file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

OutputLock::OutputLock(const std::string& path) : lock_path_(path + ".lock") {
  const SourceLocation where{path, 0, 0};
  // A holder that ends removes the lock file; one that opened it before
  // then must not keep a lock on a file no longer at the path, so the
  // lock is taken again until the locked file is the one named.
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw InputError(where, "",
                       "cannot create the result file (check the directory exists and is "
                       "writable)");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      throw InputError(where, "",
                       "is being written by another mapex (it holds " + lock_path_ +
                           "); wait for it to end or give another -o");
    }
    struct stat held {};
    struct stat named {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
  throw InputError(where, "", "cannot take the lock " + lock_path_);
}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : lock_path_(std::move(other.lock_path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

ResultWriter::ResultWriter(const std::string& path,
                           const std::map<std::string, std::string>& attributes,
                           const std::vector<JobRow>& rows)
    : ResultWriter(path, attributes, rows, OutputLock(path)) {}

ResultWriter::ResultWriter(const std::string& path,
                           const std::map<std::string, std::string>& attributes,
                           const std::vector<JobRow>& rows, OutputLock lock)
    : path_(path), lock_(std::move(lock)), attributes_(attributes), rows_(rows) {
  attributes_["format_version"] = std::to_string(kResultFormatVersion);
  // Written at once, so a run killed before its first job leaves a
  // readable file.
  commit();
}

ResultWriter::~ResultWriter() {
  try {
    flush();
  } catch (...) {
    // Destructors do not throw; callers flush before they end.
  }
}

void ResultWriter::flush() {
  if (pending_) commit();
}

void ResultWriter::append(const std::vector<JobRow>& rows) {
  rows_.insert(rows_.end(), rows.begin(), rows.end());
  pending_ = true;
  commit_if_due();
}

void ResultWriter::commit_if_due() {
  if (pending_ && std::chrono::steady_clock::now() >= next_commit_) commit();
}

void ResultWriter::mark_pareto(const std::vector<std::uint64_t>& file_rows) {
  for (const std::uint64_t i : file_rows)
    if (i < rows_.size()) rows_[static_cast<std::size_t>(i)].pareto = 1;
  commit();
}

void ResultWriter::commit() {
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t userblock = 512;  // HDF5 wants a power of two, at least 512
  while (userblock < journal_size(attributes_, rows_)) userblock *= 2;
  H5::Exception::dontPrint();
  std::string hdf5;
  try {
    hdf5 = hdf5_image(attributes_, rows_, userblock);
  } catch (const H5::Exception& e) {
    throw InputError(SourceLocation{path_, 0, 0}, "",
                     "cannot write the result file: " + e.getDetailMsg());
  }
  replace_file(path_, assemble_result_file(attributes_, rows_, userblock, hdf5));
  pending_ = false;
  const auto end = std::chrono::steady_clock::now();
  next_commit_ = end + 2 * (end - start);
}

namespace {

// {"key": "value", ...}: the searcher's parameters as given, for a column
// that Python reads with json.loads.
std::string json_object(const std::map<std::string, std::string>& values) {
  return nlohmann::json(values).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

JobRow to_row(const JobResult& r) {
  const Metrics& m = r.best;
  const bool ok = r.status == JobStatus::kOk;
  JobRow row;
  row.job_index = r.job.index;
  row.job_id = r.job.id;
  row.workload = r.workload;
  row.layer = r.layer;
  row.architecture = r.architecture;
  row.searcher = r.searcher;
  row.costmodel = r.costmodel;
  row.objective = r.objective;
  row.status = to_string(r.status);
  row.error = r.error;
  row.latency_cycles = ok ? m.latency_cycles : 0.0;
  row.energy_pj = ok ? m.energy_pj : 0.0;
  row.edp = ok ? m.edp() : 0.0;
  row.utilization = ok ? m.utilization : 0.0;
  row.macs = ok ? m.macs : 0.0;
  row.roofline_peak_cycles = r.roofline_peak_cycles;
  row.evaluations = r.evaluations;
  row.wall_seconds = r.wall_seconds;
  row.complete = r.complete ? 1 : 0;
  row.stop_reason = r.stop_reason;
  row.seed = r.job.seed;
  row.best_mapping = r.mapping_yaml;
  row.mapping_summary = r.mapping_summary;
  row.num_pes = r.num_pes;
  row.area_mm2 = r.area_mm2;
  row.power_mw = r.power_mw;
  if (ok && r.clock_mhz > 0) {
    row.latency_seconds = m.latency_cycles / (r.clock_mhz * 1e6);
    if (row.latency_seconds > 0) row.throughput_gmacs = m.macs / row.latency_seconds / 1e9;
  }
  row.searcher_plugin = r.searcher_plugin;
  row.searcher_params = json_object(r.searcher_params);
  row.max_evaluations = r.budget.max_evaluations;
  row.max_seconds = r.budget.max_seconds;
  row.trace = r.trace;
  return row;
}

namespace {

// Whether `text` is well-formed UTF-8 (the writer stores only that).
bool valid_utf8(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t more = 0;
    std::uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0) {
      more = 1;
      code = c & 0x1fu;
    } else if ((c & 0xf0) == 0xe0) {
      more = 2;
      code = c & 0x0fu;
    } else if ((c & 0xf8) == 0xf0) {
      more = 3;
      code = c & 0x07u;
    } else {
      return false;
    }
    if (i + more >= text.size()) return false;  // cut short
    for (std::size_t k = 1; k <= more; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = code << 6 | (next & 0x3fu);
    }
    // Overlong forms, surrogates and values past U+10FFFF.
    static constexpr std::uint32_t kLeast[] = {0, 0x80, 0x800, 0x10000};
    if (code < kLeast[more] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    i += more + 1;
  }
  return true;
}

// What a format-1 file's rows must satisfy, as the writer made them: such
// files carry no checksums, so a damaged byte libhdf5 reads without
// complaint is caught here when it breaks one of these (a value that is
// not finite or negative, a string that is not UTF-8, a job id that is not
// 16 hex digits or repeats, an unknown status, a flag that is not 0 or 1,
// a trace that goes backwards). A change that keeps every rule (a digit of
// a metric) cannot be found in format 1; format 2 checks every byte.
void check_format1(const std::string& path, const ResultFile& file) {
  const auto damaged = [&](const std::string& what) {
    throw InputError(SourceLocation{path, 0, 0}, "", "damaged (format 1, no checksums): " + what);
  };
  for (const auto& [key, value] : file.attributes)
    if (!valid_utf8(key) || !valid_utf8(value)) damaged("an attribute is not UTF-8 text");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < file.jobs.size(); ++i) {
    const JobRow& r = file.jobs[i];
    const std::string row = "row " + std::to_string(i) + " ";
    const bool hex =
        r.job_id.size() == 16 && std::all_of(r.job_id.begin(), r.job_id.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        });
    if (!hex) damaged(row + "has a job id that is not 16 hex digits");
    if (!ids.insert(r.job_id).second) damaged(row + "repeats job " + r.job_id);
    for (const std::string* text :
         {&r.workload, &r.layer, &r.architecture, &r.searcher, &r.costmodel, &r.objective, &r.error,
          &r.stop_reason, &r.best_mapping, &r.mapping_summary})
      if (!valid_utf8(*text)) damaged(row + "(job " + r.job_id + ") has text that is not UTF-8");
    if (r.status != "ok" && r.status != "no_valid_mapping" && r.status != "failed")
      damaged(row + "(job " + r.job_id + ") has an unknown status");
    if ((r.complete != 0 && r.complete != 1) || (r.pareto != 0 && r.pareto != 1))
      damaged(row + "(job " + r.job_id + ") has a flag that is neither 0 nor 1");
    for (const double v :
         {r.latency_cycles, r.energy_pj, r.edp, r.utilization, r.macs, r.roofline_peak_cycles,
          r.wall_seconds, r.area_mm2, r.power_mw, r.latency_seconds, r.throughput_gmacs})
      if (!std::isfinite(v) || v < 0)
        damaged(row + "(job " + r.job_id + ") has a metric that is not a finite value >= 0");
    if (r.num_pes < 0) damaged(row + "(job " + r.job_id + ") has a negative PE count");
    for (std::size_t k = 0; k < r.trace.size(); ++k)
      if (!std::isfinite(r.trace[k].value) ||
          (k > 0 && r.trace[k].evaluation < r.trace[k - 1].evaluation))
        damaged("the trace of job " + r.job_id + " is not finite and in evaluation order");
  }
}

// Format 1: a compound /jobs read through libhdf5 (such files carry no
// checksums). Extents are bounded by the file's size before anything is
// allocated: a row takes more than 64 bytes in the file.
ResultFile read_format1(const std::string& path, std::uint64_t file_size) {
  H5::Exception::dontPrint();
  ResultFile out;
  const auto check_extent = [&](hsize_t n) {
    if (n > file_size / 64)
      throw InputError(SourceLocation{path, 0, 0}, "",
                       "damaged: a table of " + std::to_string(n) + " rows in a file of " +
                           std::to_string(file_size) + " bytes");
  };
  try {
    H5::H5File file(path, H5F_ACC_RDONLY);
    for (int i = 0; i < file.getNumAttrs(); ++i) {
      H5::Attribute attr = file.openAttribute(static_cast<unsigned>(i));
      std::string value;
      attr.read(attr.getStrType(), value);
      out.attributes[attr.getName()] = value;
    }
    if (!file.nameExists("jobs"))
      throw InputError(SourceLocation{path, 0, 0}, "", "is not a mapex result file (no /jobs)");
    H5::DataSet jobs = file.openDataSet("jobs");
    H5::DataSpace space = jobs.getSpace();
    if (space.getSimpleExtentNdims() != 1)
      throw InputError(SourceLocation{path, 0, 0}, "", "is not a mapex result file (/jobs)");
    hsize_t n = 0;
    space.getSimpleExtentDims(&n);
    check_extent(n);
    std::vector<RawRow> raw(static_cast<size_t>(n));
    const H5::CompType type = row_type();
    if (n > 0) jobs.read(raw.data(), type);
    auto s = [](const char* p) { return std::string(p ? p : ""); };
    std::map<std::string, size_t> by_id;
    for (const auto& r : raw) {
      JobRow row;
      row.job_index = r.job_index;
      row.job_id = s(r.job_id);
      row.workload = s(r.workload);
      row.layer = s(r.layer);
      row.architecture = s(r.architecture);
      row.searcher = s(r.searcher);
      row.costmodel = s(r.costmodel);
      row.objective = s(r.objective);
      row.status = s(r.status);
      row.error = s(r.error);
      row.latency_cycles = r.latency_cycles;
      row.energy_pj = r.energy_pj;
      row.edp = r.edp;
      row.utilization = r.utilization;
      row.macs = r.macs;
      row.roofline_peak_cycles = r.roofline_peak_cycles;
      row.evaluations = r.evaluations;
      row.wall_seconds = r.wall_seconds;
      row.complete = r.complete;
      row.stop_reason = s(r.stop_reason);
      row.seed = r.seed;
      row.best_mapping = s(r.best_mapping);
      row.mapping_summary = s(r.mapping_summary);
      row.num_pes = r.num_pes;
      row.area_mm2 = r.area_mm2;
      row.power_mw = r.power_mw;
      row.latency_seconds = r.latency_seconds;
      row.throughput_gmacs = r.throughput_gmacs;
      row.pareto = r.pareto;
      row.file_row = out.jobs.size();
      by_id[row.job_id] = out.jobs.size();
      out.jobs.push_back(std::move(row));
    }
    if (n > 0) H5::DataSet::vlenReclaim(raw.data(), type, space);
    if (file.nameExists("traces")) {
      H5::DataSet traces = file.openDataSet("traces");
      H5::DataSpace tspace = traces.getSpace();
      if (tspace.getSimpleExtentNdims() != 1)
        throw InputError(SourceLocation{path, 0, 0}, "", "is not a mapex result file (/traces)");
      hsize_t tn = 0;
      tspace.getSimpleExtentDims(&tn);
      check_extent(tn / 2);
      std::vector<RawTrace> traw(static_cast<size_t>(tn));
      const H5::CompType ttype = trace_type();
      if (tn > 0) traces.read(traw.data(), ttype);
      for (const auto& t : traw) {
        const auto it = by_id.find(s(t.job_id));
        // Traces are flushed with their rows; one without a row is skipped.
        if (it != by_id.end()) out.jobs[it->second].trace.push_back({t.evaluation, t.value});
      }
      if (tn > 0) H5::DataSet::vlenReclaim(traw.data(), ttype, tspace);
    }
  } catch (const H5::Exception& e) {
    throw InputError(SourceLocation{path, 0, 0}, "",
                     "cannot read as a mapex result file: " + e.getDetailMsg());
  }
  check_format1(path, out);
  return out;
}

// Writes all of `bytes` to `fd`; false when the reader went away.
bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Format 1 can only be read through libhdf5, which crashes or loops on some
// damaged files (1 in 25 of format-1 files with 1-8 bytes changed). So it
// is read in a child process that hands the content back as checked
// records (encode_records): a crash or a hang there is a damaged file, not
// a dead mapex.
ResultFile read_format1_isolated(const std::string& path, std::uint64_t file_size) {
  const SourceLocation where{path, 0, 0};
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return read_format1(path, file_size);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return read_format1(path, file_size);
  }
  if (pid == 0) {
    ::close(fds[0]);
    // What libhdf5 (or a sanitizer's report of its crash) would print here
    // is not for the user: the parent turns any failure into one line.
    const int quiet = ::open("/dev/null", O_WRONLY);
    if (quiet >= 0) ::dup2(quiet, STDERR_FILENO);
    std::string reply;
    try {
      const ResultFile f = read_format1(path, file_size);
      reply = "R" + encode_records(f.attributes, f.jobs);
    } catch (const InputError& e) {
      reply = "E" + e.problem();
    } catch (...) {
      reply = "Ecannot read as a mapex result file";
    }
    ::_exit(write_all(fds[1], reply) ? 0 : 1);
  }
  ::close(fds[1]);
  // Generous for a healthy file of any size; a loop inside libhdf5 ends here.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15) +
                        std::chrono::milliseconds(file_size / 10000);
  std::string reply;
  bool timed_out = false;
  char buffer[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw InputError(where, "", "damaged: libhdf5 did not finish reading this format-1 file");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty())
    throw InputError(where, "",
                     "damaged: libhdf5 failed on this format-1 file" +
                         (WIFSIGNALED(status) ? " (signal " + std::to_string(WTERMSIG(status)) + ")"
                                              : std::string()));
  if (reply[0] == 'E') throw InputError(where, "", reply.substr(1));
  CheckedFile decoded = decode_records(reply.substr(1));
  ResultFile out;
  if (decoded.attributes) out.attributes = std::move(*decoded.attributes);
  out.jobs = std::move(decoded.rows);
  for (std::size_t i = 0; i < out.jobs.size(); ++i) out.jobs[i].file_row = i;
  return out;
}

void sort_by_job_index(ResultFile& file) {
  std::stable_sort(file.jobs.begin(), file.jobs.end(),
                   [](const JobRow& a, const JobRow& b) { return a.job_index < b.job_index; });
}

}  // namespace

ResultFile salvage_results(const std::string& path, std::string& damage) {
  damage.clear();
  boost::system::error_code ec;
  if (!boost::filesystem::exists(path, ec))
    throw InputError(SourceLocation{path, 0, 0}, "", "result file does not exist");
  if (boost::filesystem::is_directory(path, ec))
    throw InputError(SourceLocation{path, 0, 0}, "", "is a directory, not a result file");
  std::string bytes = read_whole_file(path);
  const std::uint64_t size = bytes.size();
  CheckedFile checked = check_result_bytes(bytes);
  bytes.clear();
  bytes.shrink_to_fit();
  ResultFile out;
  switch (checked.kind) {
    case FileKind::kNotResult:
      throw InputError(SourceLocation{path, 0, 0}, "",
                       "cannot read as a mapex result file: it is neither format 2 nor HDF5");
    case FileKind::kFormat1:
      out = read_format1_isolated(path, size);
      out.format1 = true;
      break;
    case FileKind::kDamaged:
      damage = checked.damage;
      [[fallthrough]];
    case FileKind::kIntact:
      if (checked.attributes) out.attributes = std::move(*checked.attributes);
      out.jobs = std::move(checked.rows);
      for (std::size_t i = 0; i < out.jobs.size(); ++i) out.jobs[i].file_row = i;
      break;
  }
  sort_by_job_index(out);
  return out;
}

std::string format1_warning(const std::string& path) {
  return "mapex: warning: " + path +
         ": a format-1 result file carries no checksums, so damage that keeps its values "
         "plausible cannot be found; `mapex merge " +
         path + " -o NEW.h5` converts it to format 2, which is checked byte by byte\n";
}

ResultFile read_results(const std::string& path) {
  std::string damage;
  ResultFile file = salvage_results(path, damage);
  if (!damage.empty())
    throw InputError(SourceLocation{path, 0, 0}, "",
                     "damaged at " + damage + "; `mapex run --resume` keeps its " +
                         std::to_string(file.jobs.size()) + " intact jobs");
  return file;
}

bool is_result_file(const std::string& path) {
  H5::Exception::dontPrint();
  try {
    boost::system::error_code ec;
    if (!boost::filesystem::is_regular_file(path, ec)) return false;
    const std::string bytes = read_whole_file(path);
    const FileKind kind = check_result_bytes(bytes).kind;
    // A damaged file of ours is still ours to replace.
    if (kind == FileKind::kIntact || kind == FileKind::kDamaged) return true;
    if (kind != FileKind::kFormat1) return false;
    // An HDF5 file: ours if it reads as format 1 (in a child process, like
    // every format-1 read).
    read_format1_isolated(path, bytes.size());
    return true;
  } catch (const H5::Exception&) {
    return false;
  } catch (const InputError&) {
    return false;
  }
}

void check_output_target(const std::string& output, const std::vector<std::string>& inputs,
                         bool force) {
  namespace fs = boost::filesystem;
  const SourceLocation where{output, 0, 0};
  boost::system::error_code ec;
  if (fs::is_directory(output, ec))
    throw InputError(where, "", "is a directory; -o expects a result file name");
  if (!fs::exists(output, ec)) return;
  // `mapex run exp.yaml -o exp.yaml` would replace the experiment by its
  // results: the most likely slip, so named as such.
  for (const auto& input : inputs)
    if (!input.empty() && fs::exists(input, ec) && fs::equivalent(output, input, ec) && !force)
      throw InputError(where, "",
                       "is an input of this command; -o refuses to replace it with results "
                       "(give another -o, or --force)");
  if (!force && !is_result_file(output))
    throw InputError(where, "",
                     "exists and is not a mapex result file; -o refuses to replace it (remove it, "
                     "give another -o, or --force)");
}

}  // namespace mapex::host
