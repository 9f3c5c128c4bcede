/* Put first on the include path of a build that must not need hwloc's
 * headers (tests/c/CMakeLists.txt): including it fails that build. */
#error "vlcs must build without hwloc's headers: use src/hwloc_abi.h"
