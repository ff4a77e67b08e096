#pragma once
// `mapex import onnx MODEL.onnx -o NET.yaml [--batch N]` (README, "ONNX
// models"): the graph is read by scripts/onnx_import.py (Debian's
// python3-onnx), and the network it writes is loaded back here with
// mapex's own reader, so the file is checked like a hand-written one.

#include <ostream>
#include <string>
#include <vector>

namespace mapex::host {

/// `args` follow `import onnx`. The importer's warnings (and its one-line
/// error) go to `err`. Returns the exit status; throws InputError for bad
/// usage or a written network that mapex's reader refuses.
int onnx_import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// The importer script: $MAPEX_ONNX_IMPORTER, else the copy next to the
/// binary (../share/mapex/onnx_import.py), else the source tree's.
std::string onnx_importer_script();

}  // namespace mapex::host
