#pragma once
// `mpirun -n K mapex run EXP.yaml -o out.h5`: jobs spread over ranks with
// dynamic load balancing; rank 0 hands out small chunks of jobs on request
// and is the only writer of the result file (no parallel HDF5); ranks
// 1..K-1 run their chunks with TBB and send the finished rows back with
// their next request. Built when MAPEX_MPI is on (MAPEX_HAVE_MPI).
//
// Only the main thread of each rank calls MPI (MPI_THREAD_FUNNELED); TBB
// workers never do.

#include <ostream>
#include <string>

#include "host/run_command.hpp"

namespace mapex::host {

/// True when the process was started by mpirun/srun (it then calls
/// MPI_Init); a plain `mapex run` never initialises MPI.
bool mpi_launched();

/// MPI_Init_thread on construction when launched under MPI, MPI_Finalize on
/// destruction.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  bool active_ = false;
  int rank_ = 0;
  int size_ = 1;
};

struct MpiRunArgs {
  std::string experiment;
  std::string output;
  int threads = 0;
  bool quiet = false;
  bool resume = false;
  bool force = false;  ///< --force: -o may replace a file that is not a result file
  Shard shard;
};

/// The run on every rank of a session with more than one rank. Bad input on
/// any rank (an experiment path not readable everywhere, an unwritable
/// output on rank 0, ranks that expand different jobs) ends every rank with
/// exit status 2 and one message from rank 0, before any file is touched.
int run_mpi(const MpiSession& session, const MpiRunArgs& args, std::ostream& out,
            std::ostream& err);

}  // namespace mapex::host
