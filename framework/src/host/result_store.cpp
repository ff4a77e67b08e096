#include "host/result_store.hpp"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cstddef>
#include <mapex/error.hpp>

namespace mapex::host {
namespace {

// The in-memory layout of a row. Strings are variable-length C strings.
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

struct RawPareto {
  std::int32_t pareto;
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

// Only the pareto member: HDF5 writes one field of existing rows by name.
H5::CompType pareto_type() {
  H5::CompType t(sizeof(RawPareto));
  t.insertMember("pareto", offsetof(RawPareto, pareto), H5::PredType::NATIVE_INT32);
  return t;
}

H5::DataSet create_table(H5::H5File& file, const char* name, const H5::CompType& type,
                         hsize_t chunk_rows) {
  const hsize_t initial[1] = {0};
  const hsize_t max[1] = {H5S_UNLIMITED};
  H5::DataSpace space(1, initial, max);
  H5::DSetCreatPropList props;
  const hsize_t chunk[1] = {chunk_rows};
  props.setChunk(1, chunk);
  return file.createDataSet(name, type, space, props);
}

// Appends `count` rows from `data` at `offset` of a one-dimensional table.
void append_rows(H5::DataSet& table, const H5::CompType& type, const void* data,
                 std::uint64_t offset, std::uint64_t count) {
  if (count == 0) return;
  const hsize_t new_size[1] = {offset + count};
  table.extend(new_size);
  H5::DataSpace file_space = table.getSpace();
  const hsize_t start[1] = {offset};
  const hsize_t n[1] = {count};
  file_space.selectHyperslab(H5S_SELECT_SET, n, start);
  H5::DataSpace memory_space(1, n);
  table.write(data, type, memory_space, file_space);
}

void write_string_attribute(H5::H5Object& object, const std::string& name,
                            const std::string& value) {
  const H5::StrType str = utf8_string();
  H5::Attribute attr = object.createAttribute(name, str, H5::DataSpace(H5S_SCALAR));
  const char* data = value.c_str();
  attr.write(str, &data);
}

}  // namespace

ResultWriter::ResultWriter(const std::string& path,
                           const std::map<std::string, std::string>& attributes)
    : path_(path) {
  H5::Exception::dontPrint();
  try {
    file_ = std::make_unique<H5::H5File>(path, H5F_ACC_TRUNC);
  } catch (const H5::Exception& e) {
    throw InputError(SourceLocation{path, 0, 0}, "",
                     "cannot create the result file (check the directory exists and is writable)");
  }
  try {
    for (const auto& [name, value] : attributes) write_string_attribute(*file_, name, value);
    // Chunks of 64 rows stay far below the 1 MiB chunk cache (STACK-NOTES).
    jobs_ = std::make_unique<H5::DataSet>(create_table(*file_, "jobs", row_type(), 64));
    traces_ = std::make_unique<H5::DataSet>(create_table(*file_, "traces", trace_type(), 1024));
    // Flushed at once, so a run killed before its first job leaves a
    // readable, empty file.
    file_->flush(H5F_SCOPE_GLOBAL);
  } catch (const H5::Exception& e) {
    throw InputError(SourceLocation{path, 0, 0}, "",
                     "cannot write the result file: " + e.getDetailMsg());
  }
}

ResultWriter::~ResultWriter() {
  try {
    if (file_) file_->flush(H5F_SCOPE_GLOBAL);
  } catch (...) {
    // Destructors do not throw; rows were flushed as they were appended.
  }
}

void ResultWriter::flush() { file_->flush(H5F_SCOPE_GLOBAL); }

void ResultWriter::append(const std::vector<JobRow>& rows) {
  std::vector<RawRow> raw;
  std::vector<RawTrace> traces;
  raw.reserve(rows.size());
  for (const JobRow& r : rows) {
    raw.push_back(RawRow{r.job_index,
                         r.job_id.c_str(),
                         r.workload.c_str(),
                         r.layer.c_str(),
                         r.architecture.c_str(),
                         r.searcher.c_str(),
                         r.costmodel.c_str(),
                         r.objective.c_str(),
                         r.status.c_str(),
                         r.error.c_str(),
                         r.latency_cycles,
                         r.energy_pj,
                         r.edp,
                         r.utilization,
                         r.macs,
                         r.roofline_peak_cycles,
                         r.evaluations,
                         r.wall_seconds,
                         r.complete,
                         r.stop_reason.c_str(),
                         r.seed,
                         r.best_mapping.c_str(),
                         r.mapping_summary.c_str(),
                         r.num_pes,
                         r.area_mm2,
                         r.power_mw,
                         r.latency_seconds,
                         r.throughput_gmacs,
                         r.pareto});
    for (const auto& t : r.trace)
      traces.push_back(RawTrace{r.job_id.c_str(), t.evaluation, t.value});
  }
  // One write per table and one flush per batch: the writer drains every
  // finished job at once, so a busy run pays one flush for many rows.
  append_rows(*jobs_, row_type(), raw.data(), rows_, raw.size());
  append_rows(*traces_, trace_type(), traces.data(), trace_rows_, traces.size());
  rows_ += raw.size();
  trace_rows_ += traces.size();
  file_->flush(H5F_SCOPE_GLOBAL);
}

void ResultWriter::mark_pareto(const std::vector<std::uint64_t>& file_rows) {
  if (file_rows.empty()) return;
  std::vector<hsize_t> coords(file_rows.begin(), file_rows.end());
  H5::DataSpace file_space = jobs_->getSpace();
  file_space.selectElements(H5S_SELECT_SET, coords.size(), coords.data());
  const hsize_t n[1] = {coords.size()};
  H5::DataSpace memory_space(1, n);
  const std::vector<RawPareto> ones(coords.size(), RawPareto{1});
  jobs_->write(ones.data(), pareto_type(), memory_space, file_space);
  file_->flush(H5F_SCOPE_GLOBAL);
}

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
  row.trace = r.trace;
  return row;
}

ResultFile read_results(const std::string& path) {
  H5::Exception::dontPrint();
  ResultFile out;
  try {
    H5::H5File file(path, H5F_ACC_RDONLY);
    for (int i = 0; i < file.getNumAttrs(); ++i) {
      H5::Attribute attr = file.openAttribute(static_cast<unsigned>(i));
      std::string value;
      attr.read(attr.getStrType(), value);
      out.attributes[attr.getName()] = value;
    }
    H5::DataSet jobs = file.openDataSet("jobs");
    H5::DataSpace space = jobs.getSpace();
    hsize_t n = 0;
    space.getSimpleExtentDims(&n);
    std::vector<RawRow> raw(static_cast<size_t>(n));
    const H5::CompType type = row_type();
    if (n > 0) jobs.read(raw.data(), type);
    auto s = [](const char* p) { return std::string(p ? p : ""); };
    std::uint64_t position = 0;
    std::map<std::string, size_t> by_id;
    for (const auto& r : raw) {
      JobRow row{r.job_index,
                 s(r.job_id),
                 s(r.workload),
                 s(r.layer),
                 s(r.architecture),
                 s(r.searcher),
                 s(r.costmodel),
                 s(r.objective),
                 s(r.status),
                 s(r.error),
                 r.latency_cycles,
                 r.energy_pj,
                 r.edp,
                 r.utilization,
                 r.macs,
                 r.roofline_peak_cycles,
                 r.evaluations,
                 r.wall_seconds,
                 r.complete,
                 s(r.stop_reason),
                 r.seed,
                 s(r.best_mapping),
                 s(r.mapping_summary),
                 r.num_pes,
                 r.area_mm2,
                 r.power_mw,
                 r.latency_seconds,
                 r.throughput_gmacs,
                 r.pareto,
                 {},
                 position++};
      by_id[row.job_id] = out.jobs.size();
      out.jobs.push_back(std::move(row));
    }
    if (n > 0) H5::DataSet::vlenReclaim(raw.data(), type, space);
    if (file.nameExists("traces")) {
      H5::DataSet traces = file.openDataSet("traces");
      H5::DataSpace tspace = traces.getSpace();
      hsize_t tn = 0;
      tspace.getSimpleExtentDims(&tn);
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
  std::sort(out.jobs.begin(), out.jobs.end(),
            [](const JobRow& a, const JobRow& b) { return a.job_index < b.job_index; });
  return out;
}

bool is_result_file(const std::string& path) {
  H5::Exception::dontPrint();
  try {
    if (!H5::H5File::isHdf5(path)) return false;
    H5::H5File file(path, H5F_ACC_RDONLY);
    return file.nameExists("jobs");
  } catch (const H5::Exception&) {
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
