"""What both sides of a context's own Python run: the memory of pickle
buffers handed over as addresses, and taken as views (vlcs._own).

The host imports this module; a runtime runs its text, compiled by the host
(so it imports nothing at its top, and its annotations are builtins)."""


class _Owner:
    """Kept alive by every view of one message's buffers; its end means
    those views are gone."""


def _addresses(buffers: list, keep: list) -> list[tuple[int, int, bool]]:
    """(address, size, readonly) of each pickle buffer; what must stay alive
    for those addresses to hold is appended to keep."""
    if not buffers:
        return []
    import ctypes

    out = []
    for b in buffers:
        raw = b.raw()
        readonly = raw.readonly
        if readonly:  # no address to give without a copy
            raw = memoryview(bytearray(raw))
        array = (ctypes.c_char * raw.nbytes).from_buffer(raw)
        keep.append((b, raw, array))
        out.append((ctypes.addressof(array), raw.nbytes, readonly))
    return out


def _views(triples: list[tuple[int, int, bool]], owner: object) -> list[memoryview]:
    """Views of the memory at those addresses, each keeping owner alive."""
    if not triples:
        return []
    import ctypes

    out = []
    for address, size, readonly in triples:
        held = type("_Held", (ctypes.c_char * size,), {}).from_address(address)
        held.owner = owner
        view = memoryview(held).cast("B")
        out.append(view.toreadonly() if readonly else view)
    return out
