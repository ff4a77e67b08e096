// Leak checking of the mapex command in the ASan build (MAPEX_ASAN only).
//
// GCC 12's LeakSanitizer misreads the dynamic TLS of modules loaded with
// dlopen under Debian 12's glibc: once the plugins and the result store are
// loaded, its tracer can die on a bogus DTLS range, and a command that
// exits with a clear error line then also prints LeakSanitizer's fatal
// error. So the command checks leaks without scanning thread-local storage
// (use_tls=0). Memory that only thread-local storage still points to at
// exit then looks leaked; the suppressions are the libraries' own
// per-thread blocks of that kind, none of them mapex's.
extern "C" {
__attribute__((visibility("default"), used)) const char* __lsan_default_options();
__attribute__((visibility("default"), used)) const char* __lsan_default_suppressions();

const char* __lsan_default_options() { return "use_tls=0:print_suppressions=0"; }

const char* __lsan_default_suppressions() {
  return
      // HDF5's per-thread error stack and cancel counter (the result store).
      "leak:libhdf5_serial.so\n"
      // glibc's table of globally loaded modules (the store is RTLD_GLOBAL).
      "leak:add_to_global_resize\n"
      // glibc's per-thread list of thread_local destructors (worker threads).
      "leak:__cxa_thread_atexit_impl\n"
      // glibc's per-thread dlerror buffer and the message formatted into it.
      "leak:_dlerror_run\n"
      "leak:__vasprintf_internal\n";
}
}
