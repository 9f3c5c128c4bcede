int vlcs_bench_svc_add(int x);
long vlcs_bench_user_loop(long n) { long s = 0; for (long i = 0; i < n; i++) s += vlcs_bench_svc_add((int)i); return s; }
