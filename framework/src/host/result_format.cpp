#include "host/result_format.hpp"

#include <algorithm>
#include <array>
#include <boost/crc.hpp>
#include <cstring>
#include <set>

namespace mapex::host {
namespace {

// Header: magic, version, sizes, the CRC-64 of each of kSegments equal parts
// of the HDF5 part (so damage there is located to a part), and the header's
// own CRC. Little-endian, fixed size.
constexpr char kMagic[8] = {'M', 'A', 'P', 'E', 'X', 'R', 'F', '2'};
constexpr char kHdf5Signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
constexpr std::size_t kSegments = 64;
constexpr std::size_t kHeaderSize = 64 + 8 * kSegments;
constexpr std::size_t kHeaderCrcAt = 56;
// Record: magic, kind, payload length, payload, CRC-64 of kind..payload.
constexpr char kRecordMagic[4] = {'M', 'X', 'R', 'C'};
constexpr std::size_t kRecordOverhead = 4 + 4 + 8 + 8;
constexpr std::uint32_t kAttributesRecord = 1;
constexpr std::uint32_t kRowRecord = 2;

// Decoding stops at the first byte that does not fit.
struct Malformed {};

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_f64(std::string& out, double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  put_u64(out, bits);
}
void put_string(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

std::uint64_t get_u64_at(const std::string& bytes, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return v;
}
std::uint32_t get_u32_at(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return v;
}

// Reads a payload; every length is bounded by what is left of it.
class PayloadReader {
 public:
  PayloadReader(const std::string& bytes, std::size_t begin, std::size_t end)
      : bytes_(bytes), at_(begin), end_(end) {}
  std::uint64_t u64() {
    need(8);
    const std::uint64_t v = get_u64_at(bytes_, at_);
    at_ += 8;
    return v;
  }
  double f64() {
    const std::uint64_t bits = u64();
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    need(n);
    std::string s = bytes_.substr(at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return s;
  }
  bool done() const { return at_ == end_; }

 private:
  void need(std::uint64_t n) const {
    if (n > end_ - at_) throw Malformed{};
  }
  const std::string& bytes_;
  std::size_t at_;
  std::size_t end_;
};

std::string encode_attributes(const std::map<std::string, std::string>& attributes) {
  std::string out;
  put_u64(out, attributes.size());
  for (const auto& [name, value] : attributes) {
    put_string(out, name);
    put_string(out, value);
  }
  return out;
}

std::map<std::string, std::string> decode_attributes(PayloadReader& in) {
  std::map<std::string, std::string> out;
  const std::uint64_t n = in.u64();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string name = in.str();
    out[name] = in.str();
  }
  if (!in.done()) throw Malformed{};
  return out;
}

std::string encode_row(const JobRow& row) {
  std::string out;
  for (const JobColumn& c : job_columns())
    std::visit(
        [&](auto member) {
          const auto& v = row.*member;
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>)
            put_string(out, v);
          else if constexpr (std::is_same_v<T, double>)
            put_f64(out, v);
          else
            put_u64(out, static_cast<std::uint64_t>(v));
        },
        c.member);
  put_u64(out, row.trace.size());
  for (const auto& t : row.trace) {
    put_u64(out, t.evaluation);
    put_f64(out, t.value);
  }
  return out;
}

JobRow decode_row(PayloadReader& in) {
  JobRow row;
  for (const JobColumn& c : job_columns())
    std::visit(
        [&](auto member) {
          auto& v = row.*member;
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>)
            v = in.str();
          else if constexpr (std::is_same_v<T, double>)
            v = in.f64();
          else
            v = static_cast<T>(in.u64());
        },
        c.member);
  const std::uint64_t points = in.u64();
  for (std::uint64_t i = 0; i < points; ++i) {
    TracePoint t;
    t.evaluation = in.u64();
    t.value = in.f64();
    row.trace.push_back(t);
  }
  if (!in.done()) throw Malformed{};
  return row;
}

std::string record(std::uint32_t kind, const std::string& payload) {
  std::string body;
  put_u32(body, kind);
  put_u64(body, payload.size());
  body += payload;
  std::string out(kRecordMagic, sizeof kRecordMagic);
  out += body;
  put_u64(out, crc64(body.data(), body.size()));
  return out;
}

struct Records {
  std::optional<std::map<std::string, std::string>> attributes;
  std::vector<JobRow> rows;
};

// The record at `at` (within [at, end)), or nullopt when its framing or
// checksum does not hold. On success `size` is its length in bytes.
bool read_record(const std::string& bytes, std::size_t at, std::size_t end, Records& into,
                 std::size_t& size) {
  if (end - at < kRecordOverhead || std::memcmp(bytes.data() + at, kRecordMagic, 4) != 0)
    return false;
  const std::uint32_t kind = get_u32_at(bytes, at + 4);
  const std::uint64_t length = get_u64_at(bytes, at + 8);
  if (length > end - at - kRecordOverhead) return false;
  const std::size_t payload = at + 16;
  const std::size_t crc_at = payload + static_cast<std::size_t>(length);
  if (crc64(bytes.data() + at + 4, crc_at - at - 4) != get_u64_at(bytes, crc_at)) return false;
  try {
    PayloadReader in(bytes, payload, crc_at);
    if (kind == kAttributesRecord)
      into.attributes = decode_attributes(in);
    else if (kind == kRowRecord)
      into.rows.push_back(decode_row(in));
    else
      return false;
  } catch (const Malformed&) {
    return false;
  }
  size = crc_at + 8 - at;
  return true;
}

// Every record in [begin, end) whose checksum holds, found by its magic:
// what a damaged file still holds.
Records scan_records(const std::string& bytes, std::size_t begin, std::size_t end) {
  Records out;
  const std::string magic(kRecordMagic, sizeof kRecordMagic);
  std::size_t at = begin;
  while (at < end) {
    at = bytes.find(magic, at);
    if (at == std::string::npos || at >= end) break;
    std::size_t size = 0;
    at += read_record(bytes, at, end, out, size) ? size : 1;
  }
  return out;
}

std::string header_bytes(std::uint64_t file_size, std::uint64_t userblock,
                         std::uint64_t journal_length, std::uint64_t records,
                         const std::string& hdf5) {
  std::string h(kMagic, sizeof kMagic);
  put_u32(h, static_cast<std::uint32_t>(kResultFormatVersion));
  put_u32(h, static_cast<std::uint32_t>(kHeaderSize));
  put_u64(h, file_size);
  put_u64(h, userblock);
  put_u64(h, journal_length);
  put_u64(h, records);
  const std::uint64_t segment =
      std::max<std::uint64_t>(1, (hdf5.size() + kSegments - 1) / kSegments);
  put_u64(h, segment);
  put_u64(h, 0);  // the header's CRC, below
  for (std::size_t i = 0; i < kSegments; ++i) {
    const std::size_t from = std::min<std::size_t>(hdf5.size(), i * segment);
    const std::size_t to = std::min<std::size_t>(hdf5.size(), from + segment);
    put_u64(h, crc64(hdf5.data() + from, to - from));
  }
  std::string covered = h.substr(0, kHeaderCrcAt) + h.substr(kHeaderCrcAt + 8);
  const std::uint64_t crc = crc64(covered.data(), covered.size());
  std::string c;
  put_u64(c, crc);
  h.replace(kHeaderCrcAt, 8, c);
  return h;
}

std::string journal(const std::map<std::string, std::string>& attributes,
                    const std::vector<JobRow>& rows) {
  std::string out = record(kAttributesRecord, encode_attributes(attributes));
  for (const JobRow& r : rows) out += record(kRowRecord, encode_row(r));
  return out;
}

// The first damage of a format-2 file whose magic matched, or "" when
// every byte checks; fills `into` with the records it read.
std::string find_damage(const std::string& bytes, Records& into) {
  if (bytes.size() < kHeaderSize) return "byte " + std::to_string(bytes.size()) + " (cut short)";
  const std::string covered = bytes.substr(0, kHeaderCrcAt) +
                              bytes.substr(kHeaderCrcAt + 8, kHeaderSize - kHeaderCrcAt - 8);
  if (crc64(covered.data(), covered.size()) != get_u64_at(bytes, kHeaderCrcAt))
    return "bytes 0-" + std::to_string(kHeaderSize - 1) + " (the header)";
  const std::uint64_t file_size = get_u64_at(bytes, 16);
  const std::uint64_t userblock = get_u64_at(bytes, 24);
  const std::uint64_t journal_length = get_u64_at(bytes, 32);
  const std::uint64_t count = get_u64_at(bytes, 40);
  const std::uint64_t segment = get_u64_at(bytes, 48);
  if (get_u32_at(bytes, 8) != kResultFormatVersion || get_u32_at(bytes, 12) != kHeaderSize)
    return "bytes 8-15 (a format this mapex does not know)";
  if (file_size != bytes.size())
    return "byte " + std::to_string(std::min<std::uint64_t>(file_size, bytes.size())) +
           " (the file is " + std::to_string(bytes.size()) + " bytes, its header says " +
           std::to_string(file_size) + ")";
  if (userblock < kHeaderSize || userblock > file_size ||
      journal_length > userblock - kHeaderSize || segment == 0)
    return "bytes 16-55 (the header's sizes)";
  // The records tile [header, header + journal_length) exactly.
  const std::size_t journal_end = kHeaderSize + static_cast<std::size_t>(journal_length);
  std::size_t at = kHeaderSize;
  std::uint64_t index = 0;
  for (; at < journal_end; ++index) {
    std::size_t size = 0;
    if (!read_record(bytes, at, journal_end, into, size))
      return "byte " + std::to_string(at) + " (record " + std::to_string(index + 1) + " of " +
             std::to_string(count) + ")";
    at += size;
  }
  if (index != count || !into.attributes) return "bytes 40-47 (the header's record count)";
  for (std::size_t p = journal_end; p < userblock; ++p)
    if (bytes[p] != 0) return "byte " + std::to_string(p) + " (the padding before the HDF5 part)";
  const std::size_t base = static_cast<std::size_t>(userblock);
  const std::size_t hdf5_size = bytes.size() - base;
  for (std::size_t i = 0; i < kSegments; ++i) {
    const std::size_t from = std::min<std::size_t>(hdf5_size, i * segment);
    const std::size_t to = std::min<std::size_t>(hdf5_size, from + segment);
    if (crc64(bytes.data() + base + from, to - from) != get_u64_at(bytes, 64 + 8 * i))
      return "bytes " + std::to_string(base + from) + "-" + std::to_string(base + to - 1) +
             " (the HDF5 part)";
  }
  return "";
}

}  // namespace

const std::vector<JobColumn>& job_columns() {
  static const std::vector<JobColumn> columns = {
      {"job_index", &JobRow::job_index, ""},
      {"job_id", &JobRow::job_id, ""},
      {"workload", &JobRow::workload, ""},
      {"layer", &JobRow::layer, ""},
      {"architecture", &JobRow::architecture, ""},
      {"searcher", &JobRow::searcher, ""},
      {"costmodel", &JobRow::costmodel, ""},
      {"objective", &JobRow::objective, ""},
      {"status", &JobRow::status, ""},
      {"error", &JobRow::error, ""},
      {"latency_cycles", &JobRow::latency_cycles, "cycles"},
      {"energy_pj", &JobRow::energy_pj, "pJ"},
      {"edp", &JobRow::edp, "pJ*cycles"},
      {"utilization", &JobRow::utilization, "1"},
      {"macs", &JobRow::macs, "MACs"},
      {"roofline_peak_cycles", &JobRow::roofline_peak_cycles, "cycles"},
      {"evaluations", &JobRow::evaluations, "evaluations"},
      {"wall_seconds", &JobRow::wall_seconds, "s"},
      {"complete", &JobRow::complete, ""},
      {"stop_reason", &JobRow::stop_reason, ""},
      {"seed", &JobRow::seed, ""},
      {"best_mapping", &JobRow::best_mapping, ""},
      {"mapping_summary", &JobRow::mapping_summary, ""},
      {"num_pes", &JobRow::num_pes, "PEs"},
      {"area_mm2", &JobRow::area_mm2, "mm^2"},
      {"power_mw", &JobRow::power_mw, "mW"},
      {"latency_seconds", &JobRow::latency_seconds, "s"},
      {"throughput_gmacs", &JobRow::throughput_gmacs, "GMAC/s"},
      {"pareto", &JobRow::pareto, ""},
      {"searcher_plugin", &JobRow::searcher_plugin, "", false},
      {"searcher_params", &JobRow::searcher_params, "", false},
      {"max_evaluations", &JobRow::max_evaluations, "evaluations", false},
      {"max_seconds", &JobRow::max_seconds, "s", false},
  };
  return columns;
}

AttributeType attribute_type(const std::string& name) {
  // Runs' and schedules' numeric attributes (run_command.cpp,
  // schedule_command.cpp); every other attribute is text.
  static const std::set<std::string> integers = {"format_version",
                                                 "plugin_abi",
                                                 "design_points",
                                                 "design_points_over_caps",
                                                 "calibrated",
                                                 "allocation_keep_one",
                                                 "k_s",
                                                 "max_segment_layers",
                                                 "seed",
                                                 "valid",
                                                 "evaluations",
                                                 "intra_layer_solves",
                                                 "intra_layer_solves_cut",
                                                 "segments",
                                                 "segments_considered",
                                                 "chains_evaluated",
                                                 "candidates",
                                                 "after_validity_pruning",
                                                 "after_pareto_pruning",
                                                 "layer_by_layer_valid",
                                                 "layer_by_layer_chosen"};
  static const std::set<std::string> reals = {
      "allocation_probability",   "energy_pj",
      "latency_cycles",           "seconds",
      "layer_by_layer_energy_pj", "layer_by_layer_latency_cycles"};
  if (integers.count(name)) return AttributeType::kInteger;
  if (reals.count(name)) return AttributeType::kReal;
  return AttributeType::kText;
}

std::uint64_t crc64(const void* data, std::size_t size) {
  // CRC-64/XZ (ECMA-182 polynomial, reflected): every burst of up to 64
  // bits is detected, any other damage with probability 1 - 2^-64.
  boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, ~0ULL, ~0ULL, true, true> crc;
  crc.process_bytes(data, size);
  return crc.checksum();
}

std::uint64_t journal_size(const std::map<std::string, std::string>& attributes,
                           const std::vector<JobRow>& rows) {
  return kHeaderSize + journal(attributes, rows).size();
}

std::string assemble_result_file(const std::map<std::string, std::string>& attributes,
                                 const std::vector<JobRow>& rows, std::uint64_t userblock,
                                 const std::string& hdf5) {
  const std::string records = journal(attributes, rows);
  const std::uint64_t file_size = userblock + hdf5.size();
  std::string out =
      header_bytes(file_size, userblock, records.size(), rows.size() + 1, hdf5) + records;
  out.resize(static_cast<std::size_t>(userblock), '\0');
  out += hdf5;
  return out;
}

std::string encode_records(const std::map<std::string, std::string>& attributes,
                           const std::vector<JobRow>& rows) {
  return journal(attributes, rows);
}

CheckedFile decode_records(const std::string& bytes) {
  Records found = scan_records(bytes, 0, bytes.size());
  CheckedFile out;
  out.kind = FileKind::kIntact;
  out.attributes = std::move(found.attributes);
  out.rows = std::move(found.rows);
  return out;
}

CheckedFile check_result_bytes(const std::string& bytes) {
  CheckedFile out;
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kHdf5Signature, 8) == 0) {
    out.kind = FileKind::kFormat1;
    return out;
  }
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0) {
    Records records;
    out.damage = find_damage(bytes, records);
    out.kind = out.damage.empty() ? FileKind::kIntact : FileKind::kDamaged;
    // Salvage: every record that holds, wherever it is (the header's sizes
    // may be what is damaged).
    if (!out.damage.empty()) records = scan_records(bytes, 0, bytes.size());
    out.attributes = std::move(records.attributes);
    out.rows = std::move(records.rows);
    return out;
  }
  // Neither signature: a file that is not ours, or ours with its first
  // bytes damaged, which its records tell apart.
  Records found = scan_records(bytes, 0, bytes.size());
  if (!found.attributes && found.rows.empty()) return out;
  out.kind = FileKind::kDamaged;
  out.damage = "bytes 0-7 (the file's signature)";
  out.attributes = std::move(found.attributes);
  out.rows = std::move(found.rows);
  return out;
}

}  // namespace mapex::host
