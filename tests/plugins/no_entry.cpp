// A shared object that is not a mapex plugin: no entry point.
extern "C" int mapex_test_not_a_plugin() { return 42; }
