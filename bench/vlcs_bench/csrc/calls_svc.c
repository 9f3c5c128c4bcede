__attribute__((noinline)) int vlcs_bench_svc_add(int x) { return x + 1; }
