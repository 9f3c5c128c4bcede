"""vlcs-bench: the benchmarks, the paper's evaluation and the demos of vlcs.

Apart from the runtime: ``import vlcs`` never imports this package, and the
runtime's wheel carries none of its programs.  The ``vlcs`` command hands
``vlcs bench ...`` and ``vlcs demo ...`` to :mod:`vlcs_bench.cli`.

* ``evaluation/`` — ``vlcs bench all``: the paper's evaluation, one module per case
* ``python_imports`` — ``vlcs bench python``; ``calls`` — ``vlcs bench shim``
* ``programs`` — ``vlcs bench core|strict`` and ``vlcs demo gemm``: C programs from ``csrc/``
* ``demo`` — ``vlcs demo python``
* ``_build`` — the cached compiler driver all of them use

>>> from vlcs_bench.evaluation import CASES
>>> CASES[1]
'overheads'
"""
