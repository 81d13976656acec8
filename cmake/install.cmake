# cmake --install: library, headers, CMake package, pkg-config file, tools,
# Nixpkgs hooks and (with help2man) man pages.
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
install(CODE "execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink runpatch
              \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/auto-patchelf)")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hooks/ DESTINATION ${CMAKE_INSTALL_DATADIR}/runpatch/hooks)
install(FILES ${PROJECT_SOURCE_DIR}/completions/runpatch.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME runpatch)
install(FILES ${PROJECT_SOURCE_DIR}/completions/_runpatch DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)

# Man pages from the same text as --help: runpatch(1), runpatch-patchelf(1)
# and one runpatch-SUB(1) per subcommand.
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(_man_dir ${PROJECT_BINARY_DIR}/man)
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
    "doctor|which libcuda each CUDA program loads on this machine, and whether it works")
  set(_pages ${_man_dir}/runpatch.1 ${_man_dir}/runpatch-patchelf.1)
  set(_commands
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_man_dir}
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
            -n "read and rewrite the runpaths of ELF files" -o ${_man_dir}/runpatch.1 $<TARGET_FILE:runpatch_cli>
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
            -n "patchelf-compatible front end of runpatch" -o ${_man_dir}/runpatch-patchelf.1
            $<TARGET_FILE:runpatch_patchelf>)
  foreach(entry ${_subcommands})
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 sub)
    list(GET parts 1 summary)
    list(APPEND _pages ${_man_dir}/runpatch-${sub}.1)
    list(APPEND _commands COMMAND ${PROJECT_SOURCE_DIR}/cmake/subcommand-man.sh ${HELP2MAN} $<TARGET_FILE:runpatch_cli>
         ${PROJECT_VERSION} ${sub} "${summary}" ${_man_dir}/runpatch-${sub}.1)
  endforeach()
  add_custom_command(OUTPUT ${_pages} ${_commands}
    DEPENDS runpatch_cli runpatch_patchelf ${PROJECT_SOURCE_DIR}/cmake/subcommand-man.sh VERBATIM)
  add_custom_target(man ALL DEPENDS ${_pages})
  install(FILES ${_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
