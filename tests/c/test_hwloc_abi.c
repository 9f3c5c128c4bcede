/* src/hwloc_abi.h against hwloc's own header, where it is installed: the
 * object's CPU set where hwloc 2 keeps it, the depth answers it gives; and
 * through libvlcs, a place resolved with the library found at run time. */
#include <hwloc.h>
#include <stddef.h>

#include "../../src/hwloc_abi.h"
#include "check.h"

_Static_assert(offsetof(struct hwloc_obj, cpuset) == offsetof(struct vh_obj, cpuset),
               "hwloc_abi.h: the object's cpuset is not where hwloc 2 keeps it");
_Static_assert(offsetof(struct hwloc_obj, type) == offsetof(struct vh_obj, type), "type");
_Static_assert(sizeof(hwloc_obj_type_t) == sizeof(vh_obj_type_t), "the type enum's size");
_Static_assert((int)HWLOC_TYPE_DEPTH_UNKNOWN == (int)VH_DEPTH_UNKNOWN, "depth unknown");
_Static_assert((int)HWLOC_TYPE_DEPTH_MULTIPLE == (int)VH_DEPTH_MULTIPLE, "depth multiple");
_Static_assert((int)HWLOC_TYPE_DEPTH_NUMANODE == (int)VH_DEPTH_NUMANODE, "depth of NUMA nodes");
_Static_assert(sizeof(union hwloc_obj_attr_u) <= sizeof(union vh_attr), "room for attributes");

int main(void)
{
    /* hwloc 2, as hwloc_abi.h declares: the library this header belongs to */
    CHECK(hwloc_get_api_version() >> 16 == 2, "hwloc 2 at run time");
    setenv("VLCS_TOPOLOGY", "synthetic:package:2 core:2 pu:2", 1);
    char buf[64];
    CHECK_EQ(4, vlcs_place_cpus("package:1", buf, sizeof buf), "package 1 of 2, 2 cores of 2 PUs");
    CHECK_STR("4-7", buf, "its CPUs");
    CHECK_EQ(4, vlcs_place_cpus("core:0-3.pu:0", buf, sizeof buf), "each core's first PU");
    CHECK_STR("0,2,4,6", buf, "every other CPU");
    PASS("hwloc ABI");
    return 0;
}
