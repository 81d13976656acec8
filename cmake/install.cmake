# cmake --install: library, headers, CMake package, pkg-config file, tools,
# Nixpkgs hooks, shell completions and man pages.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS runpatch runpatch_warnings EXPORT runpatchTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/runpatch DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT runpatchTargets NAMESPACE runpatch:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/runpatch)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/runpatchConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/runpatchConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/runpatch)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/runpatchConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/runpatchConfig.cmake ${PROJECT_BINARY_DIR}/runpatchConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/runpatch)
file(RELATIVE_PATH PC_PREFIX_FROM_PCFILEDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/runpatch.pc.in ${PROJECT_BINARY_DIR}/runpatch.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/runpatch.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS runpatch_cli runpatch_patchelf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# runpatch trace's audit library, found from the tool's own directory (tools/CMakeLists.txt).
install(TARGETS runpatch_audit LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/runpatch)
install(CODE "execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink runpatch
              \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/auto-patchelf)")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hooks/ DESTINATION ${CMAKE_INSTALL_DATADIR}/runpatch/hooks)
install(FILES ${PROJECT_SOURCE_DIR}/completions/runpatch.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME runpatch)
install(FILES ${PROJECT_SOURCE_DIR}/completions/_runpatch DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
# The drop-ins' completions are written by the build from their option tables (tools/CMakeLists.txt).
foreach(tool runpatch-patchelf auto-patchelf)
  install(FILES ${PROJECT_BINARY_DIR}/completions/${tool}.bash
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ${tool})
  install(FILES ${PROJECT_BINARY_DIR}/completions/_${tool} DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
endforeach()

# Man pages from the same text as --help: runpatch(1), runpatch-patchelf(1)
# and one runpatch-SUB(1) per subcommand, each with the EXIT STATUS, FILES and
# EXAMPLES sections of docs/man/PAGE.h2m. Without help2man the build fails
# rather than install no pages; -DRUNPATCH_MAN_PAGES=OFF builds none (e.g.
# when cross-compiling: help2man runs the tools).
option(RUNPATCH_MAN_PAGES "Generate and install the man pages (needs help2man)" ON)
if(RUNPATCH_MAN_PAGES)
  find_program(HELP2MAN help2man)
  if(NOT HELP2MAN)
    message(FATAL_ERROR "help2man not found: it writes the man pages. Install it (Debian: apt-get install help2man), "
                        "or configure with -DRUNPATCH_MAN_PAGES=OFF to build without man pages.")
  endif()
  set(_man_dir ${PROJECT_BINARY_DIR}/man)
  set(_man_src ${PROJECT_SOURCE_DIR}/docs/man)
  set(_man_script ${PROJECT_SOURCE_DIR}/cmake/man-page.sh)
  set(_subcommands
    "print|show interpreter, needed libraries and runpaths of ELF files"
    "scan|list every dynamically linked ELF file under directories"
    "set|edit runpath, interpreter, soname or needed entries"
    "tree|the dependency tree as ld.so resolves it"
    "why|every step the loader takes for one library, and the fix"
    "driver|put the driver directory in every runpath (behind cuda_compat)"
    "compat|put cuda_compat's libcuda first in every runpath"
    "apply|apply a runpath policy file"
    "auto-patchelf|resolve DT_NEEDED against dependencies, as Nixpkgs' autoPatchelfHook"
    "check|verify runpaths for CI"
    "doctor|which libcuda each CUDA program loads on this machine, and whether it works"
    "trace|run a command and report how the loader found every library")
  set(_pages ${_man_dir}/runpatch.1 ${_man_dir}/runpatch-patchelf.1)
  set(_includes ${_man_src}/runpatch.h2m ${_man_src}/runpatch-patchelf.h2m)
  set(_commands
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_man_dir}
    COMMAND ${_man_script} ${HELP2MAN} $<TARGET_FILE:runpatch_cli> ${PROJECT_VERSION}
            "read and rewrite the runpaths of ELF files" ${_man_src}/runpatch.h2m ${_man_dir}/runpatch.1
    COMMAND ${_man_script} ${HELP2MAN} $<TARGET_FILE:runpatch_patchelf> ${PROJECT_VERSION}
            "patchelf-compatible front end of runpatch" ${_man_src}/runpatch-patchelf.h2m ${_man_dir}/runpatch-patchelf.1)
  foreach(entry ${_subcommands})
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 sub)
    list(GET parts 1 summary)
    list(APPEND _pages ${_man_dir}/runpatch-${sub}.1)
    list(APPEND _includes ${_man_src}/runpatch-${sub}.h2m)
    list(APPEND _commands COMMAND ${_man_script} ${HELP2MAN} $<TARGET_FILE:runpatch_cli> ${PROJECT_VERSION}
         "${summary}" ${_man_src}/runpatch-${sub}.h2m ${_man_dir}/runpatch-${sub}.1 ${sub})
  endforeach()
  add_custom_command(OUTPUT ${_pages} ${_commands}
    DEPENDS runpatch_cli runpatch_patchelf ${_man_script} ${_includes} VERBATIM)
  add_custom_target(man ALL DEPENDS ${_pages})
  install(FILES ${_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
