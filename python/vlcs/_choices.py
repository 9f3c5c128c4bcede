"""The values some options take, apart from the code that uses them: the
command line offers them as choices without importing that code (ctypes,
the native library), which ``vlcs exec`` may not need before it starts
again under its launcher."""

# hwloc's kinds of places, largest first (vlcs._topo)
PLACES = ("package", "numa", "l3", "l2", "core", "pu")
# how vlcs exec writes its instances' output, and gives them stdin (vlcs._exec)
OUTPUTS = ("tag", "plain")
STDINS = ("first", "all")
