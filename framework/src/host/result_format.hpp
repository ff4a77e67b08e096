#pragma once
// The byte layout of a result file, format 2 (README.md, Result files), read
// and checked without libhdf5.
//
// A file is [header][journal records][zero padding][HDF5 file]. The HDF5
// part starts at a power of two (HDF5's user block), so h5py and h5dump
// open the file as usual. The header and the records are mapex's own: the
// header carries the sizes and checksums (CRC-64) of everything after it,
// each record carries its own checksum. mapex reads results from the
// records and hands no byte of a result file to libhdf5 before every byte
// has been checked, since libhdf5 1.10 crashes or loops on a file that
// differs from a valid one in a few bytes (issue: damaged result files).
// A damaged file still gives every record whose checksum holds (salvage).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "host/runner.hpp"

namespace mapex::host {

/// One row of /jobs as read back.
struct JobRow {
  std::uint64_t job_index = 0;
  std::string job_id;
  std::string workload;
  std::string layer;
  std::string architecture;
  std::string searcher;
  std::string costmodel;
  std::string objective;
  std::string status;
  std::string error;
  double latency_cycles = 0;
  double energy_pj = 0;
  double edp = 0;
  double utilization = 0;
  double macs = 0;
  double roofline_peak_cycles = 0;
  std::uint64_t evaluations = 0;
  double wall_seconds = 0;
  std::int32_t complete = 0;
  std::string stop_reason;
  std::uint64_t seed = 0;
  std::string best_mapping;  ///< YAML
  std::string mapping_summary;
  // Design point (hardware DSE).
  std::int64_t num_pes = 0;
  double area_mm2 = 0;
  double power_mw = 0;
  double latency_seconds = 0;
  double throughput_gmacs = 0;  ///< MACs per second / 1e9
  std::int32_t pareto = 0;      ///< 1 on the Pareto set of its group
  // Format 2: the searcher as run (empty / 0 when read from format 1).
  std::string searcher_plugin;
  std::string searcher_params;  ///< a JSON object of strings, keys sorted
  std::uint64_t max_evaluations = 0;
  double max_seconds = 0;
  /// Not a column: the job's rows of /traces.
  std::vector<TracePoint> trace;
  /// Not a column: the row's position in the file (read_results).
  std::uint64_t file_row = 0;
};

/// A column of /jobs: its name, the member it holds and its unit ("" when
/// it has none). One table drives the journal, the HDF5 part and the
/// format-1 reader, so the three cannot disagree.
struct JobColumn {
  const char* name;
  std::variant<std::string JobRow::*, std::uint64_t JobRow::*, std::int64_t JobRow::*,
               std::int32_t JobRow::*, double JobRow::*>
      member;
  const char* units;
  bool format1 = true;  ///< present in format-1 files
};
const std::vector<JobColumn>& job_columns();

/// The current format, written to every new file (root attribute
/// `format_version`); format 1 (a compound /jobs, no journal) is still read.
constexpr std::int64_t kResultFormatVersion = 2;

/// How a root attribute is stored in the HDF5 part: numbers as numbers
/// (h5py gives int / float), the rest as UTF-8 text (h5py gives str).
enum class AttributeType { kText, kInteger, kReal };
AttributeType attribute_type(const std::string& name);

/// CRC-64/XZ of `size` bytes.
std::uint64_t crc64(const void* data, std::size_t size);

/// The header and records of a file whose HDF5 part is `hdf5` (a complete
/// HDF5 file written with a user block of `userblock` bytes, which must
/// hold the returned journal: see journal_size). Returns the whole file.
std::string assemble_result_file(const std::map<std::string, std::string>& attributes,
                                 const std::vector<JobRow>& rows, std::uint64_t userblock,
                                 const std::string& hdf5);
/// The bytes the header and records of these rows take (the user block
/// must be at least this large).
std::uint64_t journal_size(const std::map<std::string, std::string>& attributes,
                           const std::vector<JobRow>& rows);

/// What a file's bytes are.
enum class FileKind {
  kIntact,     ///< format 2, every checksum holds
  kDamaged,    ///< format 2 (or records of it found), something does not hold
  kFormat1,    ///< an HDF5 file at byte 0: format 1, or not mapex's at all
  kNotResult,  ///< neither
};

struct CheckedFile {
  FileKind kind = FileKind::kNotResult;
  std::string damage;  ///< where, for kDamaged: "byte 612 (job record 3 of 9)"
  /// Every record whose checksum holds; complete when kIntact.
  std::optional<std::map<std::string, std::string>> attributes;
  std::vector<JobRow> rows;  ///< in file order, traces attached
};

/// The records of these attributes and rows alone, without a header: how
/// the process that reads a format-1 file hands its content back.
std::string encode_records(const std::map<std::string, std::string>& attributes,
                           const std::vector<JobRow>& rows);
/// Every record of `bytes` whose checksum holds (encode_records' inverse).
CheckedFile decode_records(const std::string& bytes);

/// Checks every byte of `bytes` (a whole file) and decodes the records.
/// Never trusts a size it has not bounded by the file's size.
CheckedFile check_result_bytes(const std::string& bytes);

}  // namespace mapex::host
