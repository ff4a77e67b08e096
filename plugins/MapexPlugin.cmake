# mapex_add_plugin(<name> SOURCES <files>... [OUTPUT_DIRECTORY <dir>] [NO_INSTALL])
#
# Builds a mapex plugin: a MODULE library compiled against the public
# headers of the core library only, with hidden visibility so that the one
# entry point (MAPEX_PLUGIN in mapex/plugin.hpp) is all it exports. In the
# mapex tree it lands in the build's plugin directory, where `mapex` finds
# it; out of tree, in OUTPUT_DIRECTORY or the current binary directory
# (point MAPEX_PLUGIN_PATH there). `cmake --install` puts it in
# lib/mapex/plugins under the prefix, where an installed `mapex` finds it
# when the prefixes are the same; NO_INSTALL keeps it out (test plugins).
# An out-of-tree plugin may be linked by an older linker than the one that
# built mapex: the two layout options below are used only where the linker
# takes them (binutils 2.38 or newer for packed relative relocations).
include(CheckLinkerFlag)
check_linker_flag(CXX "LINKER:-z,pack-relative-relocs" MAPEX_LINKER_PACKS_RELOCS)
set(MAPEX_PLUGIN_LAYOUT_OPTIONS)
if(MAPEX_LINKER_PACKS_RELOCS)
  set(MAPEX_PLUGIN_LAYOUT_OPTIONS LINKER:-z,noseparate-code LINKER:-z,pack-relative-relocs)
endif()

function(mapex_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "mapex_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE mapex::core)
  # mapex::core is two libraries (libmapex, libmapex_io with yaml-cpp and
  # TBB): the plugin records only the one it calls, so a cost model such as
  # mdc loads without the YAML reader and the task scheduler.
  # Two mappings instead of four, relative relocations packed (DT_RELR):
  # fewer mmaps and page faults when `mapex` opens the plugin (the core
  # library is linked the same way, framework/CMakeLists.txt).
  target_link_options(${name} PRIVATE LINKER:--as-needed ${MAPEX_PLUGIN_LAYOUT_OPTIONS})
  if(TARGET mapex_warnings)
    target_link_libraries(${name} PRIVATE mapex_warnings)
  else()
    target_compile_options(${name} PRIVATE -Wall -Wextra)
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set(out ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED MAPEX_PLUGIN_OUTPUT_DIR)
    set(out ${MAPEX_PLUGIN_OUTPUT_DIR})
  else()
    set(out ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  # The host loads plugins with RTLD_LOCAL, and a loaded library does not
  # inherit the host's RUNPATH: point the plugin at lib/ itself.
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${out}
    BUILD_RPATH "$ORIGIN/../..;$<TARGET_FILE_DIR:mapex::base>"
    INSTALL_RPATH "$ORIGIN/../..")
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} LIBRARY DESTINATION lib/mapex/plugins)
  endif()
endfunction()
