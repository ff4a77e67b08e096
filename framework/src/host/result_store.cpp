#include "host/result_store.hpp"

#include <algorithm>
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
#undef MAPEX_MEMBER
  return t;
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
  for (const auto& [name, value] : attributes) write_string_attribute(*file_, name, value);
  const hsize_t initial[1] = {0};
  const hsize_t max[1] = {H5S_UNLIMITED};
  H5::DataSpace space(1, initial, max);
  H5::DSetCreatPropList props;
  const hsize_t chunk[1] = {64};
  props.setChunk(1, chunk);
  jobs_ = std::make_unique<H5::DataSet>(file_->createDataSet("jobs", row_type(), space, props));
  traces_ = std::make_unique<H5::Group>(file_->createGroup("traces"));
  pareto_ = std::make_unique<H5::Group>(file_->createGroup("pareto"));
  file_->flush(H5F_SCOPE_GLOBAL);
}

ResultWriter::~ResultWriter() {
  try {
    if (file_) file_->flush(H5F_SCOPE_GLOBAL);
  } catch (...) {
    // Destructors do not throw; rows were flushed as they were appended.
  }
}

void ResultWriter::append(const JobResult& r) {
  const Metrics& m = r.best;
  const bool ok = r.status == JobStatus::kOk;
  const std::string status = to_string(r.status);
  RawRow row{r.job.index,
             r.job.id.c_str(),
             r.workload.c_str(),
             r.layer.c_str(),
             r.architecture.c_str(),
             r.searcher.c_str(),
             r.costmodel.c_str(),
             r.objective.c_str(),
             status.c_str(),
             r.error.c_str(),
             ok ? m.latency_cycles : 0.0,
             ok ? m.energy_pj : 0.0,
             ok ? m.edp() : 0.0,
             ok ? m.utilization : 0.0,
             ok ? m.macs : 0.0,
             r.roofline_peak_cycles,
             r.evaluations,
             r.wall_seconds,
             r.complete ? 1 : 0,
             r.stop_reason.c_str(),
             r.job.seed,
             r.mapping_yaml.c_str(),
             r.mapping_summary.c_str()};
  const hsize_t new_size[1] = {rows_ + 1};
  jobs_->extend(new_size);
  H5::DataSpace file_space = jobs_->getSpace();
  const hsize_t offset[1] = {rows_};
  const hsize_t count[1] = {1};
  file_space.selectHyperslab(H5S_SELECT_SET, count, offset);
  H5::DataSpace memory_space(1, count);
  jobs_->write(&row, row_type(), memory_space, file_space);
  ++rows_;
  write_trace(r);
  write_pareto(r);
  file_->flush(H5F_SCOPE_GLOBAL);
}

void ResultWriter::write_trace(const JobResult& r) {
  if (r.trace.empty() || traces_->nameExists(r.job.id)) return;
  H5::CompType type(sizeof(TracePoint));
  type.insertMember("evaluation", HOFFSET(TracePoint, evaluation), H5::PredType::NATIVE_UINT64);
  type.insertMember("value", HOFFSET(TracePoint, value), H5::PredType::NATIVE_DOUBLE);
  const hsize_t n[1] = {r.trace.size()};
  H5::DataSpace space(1, n);
  H5::DataSet set = traces_->createDataSet(r.job.id, type, space);
  set.write(r.trace.data(), type);
  write_string_attribute(set, "objective", r.objective);
}

namespace {
struct RawFront {
  std::uint64_t evaluation;
  double latency_cycles;
  double energy_pj;
  const char* mapping;
};
}  // namespace

void ResultWriter::write_pareto(const JobResult& r) {
  if (r.pareto.empty() || pareto_->nameExists(r.job.id)) return;
  H5::CompType type(sizeof(RawFront));
  type.insertMember("evaluation", HOFFSET(RawFront, evaluation), H5::PredType::NATIVE_UINT64);
  type.insertMember("latency_cycles", HOFFSET(RawFront, latency_cycles),
                    H5::PredType::NATIVE_DOUBLE);
  type.insertMember("energy_pj", HOFFSET(RawFront, energy_pj), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("mapping", HOFFSET(RawFront, mapping), utf8_string());
  std::vector<RawFront> rows;
  for (const auto& p : r.pareto)
    rows.push_back({p.evaluation, p.latency_cycles, p.energy_pj, p.mapping_summary.c_str()});
  const hsize_t n[1] = {rows.size()};
  H5::DataSpace space(1, n);
  H5::DataSet set = pareto_->createDataSet(r.job.id, type, space);
  set.write(rows.data(), type);
}

std::vector<TracePoint> read_trace(const std::string& path, const std::string& job_id) {
  H5::Exception::dontPrint();
  try {
    H5::H5File file(path, H5F_ACC_RDONLY);
    if (!file.nameExists("traces") || !file.openGroup("traces").nameExists(job_id)) return {};
    H5::DataSet set = file.openGroup("traces").openDataSet(job_id);
    H5::CompType type(sizeof(TracePoint));
    type.insertMember("evaluation", HOFFSET(TracePoint, evaluation), H5::PredType::NATIVE_UINT64);
    type.insertMember("value", HOFFSET(TracePoint, value), H5::PredType::NATIVE_DOUBLE);
    hsize_t n[1];
    set.getSpace().getSimpleExtentDims(n);
    std::vector<TracePoint> out(n[0]);
    if (n[0]) set.read(out.data(), type);
    return out;
  } catch (const H5::Exception& e) {
    throw InputError(SourceLocation{path, 0, 0}, "", "cannot read the trace of job " + job_id);
  }
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
    for (const auto& r : raw) {
      out.jobs.push_back(JobRow{r.job_index,
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
                                s(r.mapping_summary)});
    }
    if (n > 0) H5::DataSet::vlenReclaim(raw.data(), type, space);
  } catch (const H5::Exception& e) {
    throw InputError(SourceLocation{path, 0, 0}, "",
                     "cannot read as a mapex result file: " + e.getDetailMsg());
  }
  std::sort(out.jobs.begin(), out.jobs.end(),
            [](const JobRow& a, const JobRow& b) { return a.job_index < b.job_index; });
  return out;
}

}  // namespace mapex::host
