"""What vlcs reads of an ELF64 little-endian file's dynamic section, from
its section headers (``vlcs shim`` asks)."""

from __future__ import annotations

import struct

SHT_DYNAMIC = 6
DT_SONAME = 14


def sections(blob: bytes) -> list[tuple[int, ...]]:
    """The section headers (sh_name, sh_type, sh_flags, sh_addr, sh_offset,
    sh_size, sh_link, sh_info, sh_addralign, sh_entsize); ValueError when
    blob is no 64-bit little-endian ELF file."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", blob, 0x3A)
    return [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize) for i in range(shnum)]


def string_at(blob: bytes, table_offset: int, at: int) -> str:
    start = table_offset + at
    return blob[start : blob.index(b"\0", start)].decode(errors="replace")


def dynamic_strings(blob: bytes, tag: int, heads: list[tuple[int, ...]] | None = None) -> list[str]:
    """The strings of blob's dynamic entries tagged tag (DT_NEEDED,
    DT_SONAME), in their order; heads: its sections, where read already."""
    if heads is None:
        heads = sections(blob)
    out = []
    for sh in heads:
        if sh[1] != SHT_DYNAMIC:
            continue
        strtab = heads[sh[6]][4]
        for o in range(sh[4], sh[4] + sh[5], 16):
            t, val = struct.unpack_from("<qQ", blob, o)
            if t == tag:
                out.append(string_at(blob, strtab, val))
    return out
