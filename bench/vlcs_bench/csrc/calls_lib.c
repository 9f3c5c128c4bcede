__attribute__((noinline)) int vlcs_bench_add(int x) { return x + 1; }
