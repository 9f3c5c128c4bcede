"""Writes the XML topologies the tests plan for: hwloc's own export of
synthetic machines numbered as Linux numbers real ones (a core's hardware
threads are CPUs i and i + cores, packages in order), which synthetic
descriptions alone do not do.  Run from this directory; needs libhwloc.

    python make.py
"""

from __future__ import annotations

import ctypes
import ctypes.util

# name: (hwloc synthetic description without PU numbering, cores, threads per core)
MACHINES = {
    # two-socket AMD EPYC (Rome/Milan-like): 8 L3 (CCX) per socket, 8 cores each, SMT2
    "epyc-2s-8l3.xml": ("pack:2 l3:8 core:8 pu:2", 128, 2),
    # two-socket Intel Xeon with sub-NUMA clustering (SNC2): 2 NUMA nodes per
    # socket, 20 cores each, one L3 per socket, HT
    "xeon-2s-snc2.xml": ("pack:2 l3:1 numa:2 core:20 pu:2", 80, 2),
    # a 4-NUMA ARM server (Neoverse-like): one L3 per NUMA node, 16 cores each, no SMT
    "arm-4numa.xml": ("pack:1 numa:4 l3:1 core:16 pu:1", 64, 1),
}


def pu_indexes(cores: int, threads: int) -> str:
    """The OS index of each PU in hwloc's logical order: thread t of core c
    is CPU c + t * cores."""
    return ",".join(str(c + t * cores) for c in range(cores) for t in range(threads))


def main() -> None:
    h = ctypes.CDLL(ctypes.util.find_library("hwloc") or "libhwloc.so.15")
    for name, (desc, cores, threads) in MACHINES.items():
        topo = ctypes.c_void_p()
        assert h.hwloc_topology_init(ctypes.byref(topo)) == 0
        full = f"{desc}(indexes={pu_indexes(cores, threads)})"
        assert h.hwloc_topology_set_synthetic(topo, full.encode()) == 0, full
        assert h.hwloc_topology_load(topo) == 0
        assert h.hwloc_topology_export_xml(topo, name.encode(), ctypes.c_ulong(0)) == 0
        h.hwloc_topology_destroy(topo)
        print("wrote", name)


if __name__ == "__main__":
    main()
