# `cpack` builds a Debian package (DEB) and a relocatable tarball (TGZ,
# trirace-<version>-linux-x86_64.tar.gz: the install tree under one folder;
# `trirace run` finds the libraries relative to itself). Depends is computed
# from the built libraries by dpkg-shlibdeps; with TRIRACE_BUNDLED_DEPS (the
# default) Abseil and tinyxml2 are inside the libraries, and only the C/C++
# runtime and the optional hwloc backend's libhwloc remain. libnccl and
# libcuda never appear because nothing links them.

set(CPACK_PACKAGE_NAME "trirace")
set(CPACK_PACKAGE_VENDOR "TriRace")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_PACKAGE_FILE_NAME "trirace-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_PACKAGE_CONTACT "TriRace developers <trirace@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
find_program(TRIRACE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(TRIRACE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "TriRace: dpkg-shlibdeps not found: the .deb lists the runtime packages by name (install dpkg-dev)")
endif()
# Named explicitly as well, so the list holds even where shlibdeps is absent.
# libibverbs is loaded with dlopen where present (InfiniBand discovery).
if(TRIRACE_BUNDLED_DEPS)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libhwloc15")
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libabsl20220623, libhwloc15, libtinyxml2-9")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libibverbs1")
include(CPack)
