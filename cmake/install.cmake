# Installing syscope: `make install PREFIX=...`, the bundle (scripts/make-bundle) and the
# Debian package (`make deb`: cpack -G DEB) all install the same tree:
#
#   bin/syscope, bin/syscope-<verb>     the CLI; syscope-sample runs `syscope sample`
#                                       (rocprof-sys's rocprof-sys-sample shape)
#   lib/syscope/                        libsyscope.so and the plugins (SYSCOPE_INSTALL_PLUGINDIR)
#   share/man/man1/syscope.1, share/bash-completion/completions/syscope, share/syscope/presets
#   include/syscope/syscope.h

# One command per verb, as a link to syscope in bin/ (the build tree has them too). A verb
# added to src/cmd/main.c is added here.
set(SYSCOPE_VERB_COMMANDS sample run instrument python attach causal avail convert summary merge report)
set(SYSCOPE_VERB_LINKS "")
foreach(verb ${SYSCOPE_VERB_COMMANDS})
  set(link ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/syscope-${verb})
  add_custom_command(OUTPUT ${link}
    COMMAND ${CMAKE_COMMAND} -E create_symlink syscope ${link}
    DEPENDS syscope
    COMMENT "Linking syscope-${verb}")
  list(APPEND SYSCOPE_VERB_LINKS ${link})
endforeach()
add_custom_target(syscope_verb_links ALL DEPENDS ${SYSCOPE_VERB_LINKS})
# file(INSTALL) keeps a link a link.
install(FILES ${SYSCOPE_VERB_LINKS} DESTINATION ${CMAKE_INSTALL_BINDIR})

# ---- the Debian package ----
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "syscope")
set(CPACK_PACKAGE_VENDOR "syscope")
set(CPACK_PACKAGE_CONTACT "syscope developers <syscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "System-level profiler for Linux programs: sampling, tracing, rocpd and Perfetto outputs")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
# The Debian 12 packages of the libraries the CLI links (libsyscope.so needs libc only).
# Named here, not found by dpkg-shlibdeps: the CUDA plugin links the NVIDIA driver's
# libcuda.so.1, which no Debian package provides and which it needs only where there is a
# GPU. libunwind is loaded with dlopen, with frame pointers as the fallback.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libc6, libstdc++6, libdw1, libelf1, libjansson4, libsqlite3-0, libpfm4, libcapstone4")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libunwind8")
include(CPack)
