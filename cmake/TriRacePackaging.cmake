# `cpack -G DEB` builds a Debian package of the install tree. Depends is
# computed from the built libraries by dpkg-shlibdeps (Abseil, hwloc, ibverbs,
# libstdc++ ...); libnccl and libcuda never appear because nothing links them.

set(CPACK_PACKAGE_NAME "trirace")
set(CPACK_PACKAGE_VENDOR "TriRace")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "TriRace developers <trirace@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
find_program(TRIRACE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(TRIRACE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "TriRace: dpkg-shlibdeps not found: the .deb lists the runtime packages by name (install dpkg-dev)")
endif()
# Named explicitly as well, so the list holds even where shlibdeps is absent
# and for libraries that are loaded with dlopen.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libabsl20220623, libhwloc15, libibverbs1, libtinyxml2-9")
include(CPack)
