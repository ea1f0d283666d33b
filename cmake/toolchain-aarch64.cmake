# Cross build for arm64 (aarch64) Linux with Debian's cross compiler (g++-aarch64-linux-gnu) against
# an arm64 sysroot holding the -dev packages (scripts/cross-build-arm64.sh makes one with mmdebstrap).
# The sysroot: -DRFA_SYSROOT=..., else $RFA_SYSROOT, else /var/tmp/arm64-sysroot.
# Tests and other target programs run through qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR), with
# the sysroot as the loader prefix (-L): no binfmt_misc registration is needed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT RFA_SYSROOT)
  if(DEFINED ENV{RFA_SYSROOT})
    set(RFA_SYSROOT "$ENV{RFA_SYSROOT}")
  else()
    set(RFA_SYSROOT /var/tmp/arm64-sysroot)
  endif()
endif()
# try_compile projects (FindOpenMP, FindMPI, ...) read this file again: hand them the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RFA_SYSROOT)
set(ENV{RFA_SYSROOT} "${RFA_SYSROOT}")

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_SYSROOT "${RFA_SYSROOT}")
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Headers, libraries and CMake packages from the sysroot only; programs (pkg-config, python3) from the host.
set(CMAKE_FIND_ROOT_PATH "${RFA_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The host's pkg-config, reading the sysroot's .pc files and prefixing their paths with it.
set(ENV{PKG_CONFIG_DIR} "")
set(ENV{PKG_CONFIG_LIBDIR} "${RFA_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${RFA_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${RFA_SYSROOT}")

# Open MPI without its wrapper compiler (the host's mpicxx would report the host's paths): Debian's
# arm64 libopenmpi-dev keeps mpi.h and libmpi.so under /usr/lib/aarch64-linux-gnu/openmpi.
set(MPI_CXX_SKIP_MPICXX ON)
set(MPI_CXX_INCLUDE_PATH "${RFA_SYSROOT}/usr/lib/aarch64-linux-gnu/openmpi/include" CACHE STRING "")
set(MPI_CXX_LIB_NAMES mpi CACHE STRING "")
set(MPI_mpi_LIBRARY "${RFA_SYSROOT}/usr/lib/aarch64-linux-gnu/openmpi/lib/libmpi.so" CACHE FILEPATH "")

find_program(RFA_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(RFA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${RFA_QEMU_AARCH64};-L;${RFA_SYSROOT}")
endif()
