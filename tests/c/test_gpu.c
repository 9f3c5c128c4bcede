/* GPUs per context.  `test_gpu env`: the visibility variables a GPU runtime
 * loaded in the context reads.  `test_gpu device`: with the CUDA runtime as
 * a service, entering a context makes its GPU current; needs a GPU and
 * skips with the reason where there is none.  `test_gpu fake`: the same
 * with a stand-in runtime, on any machine. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>

typedef const char *(*getenv_fn)(const char *);

static int env_part(void)
{
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    CHECK_EQ(0, vlcs_ctx_set_gpus(a, "1,3"), "set");
    CHECK_EQ(0, vlcs_ctx_set_gpus(b, "0-2"), "ranges are accepted");
    void *la = must_load(a, PROBE_LIB), *lb = must_load(b, PROBE_LIB);
    getenv_fn ga = SYM(la, getenv_fn, "probe_getenv"), gb = SYM(lb, getenv_fn, "probe_getenv");
    CHECK_STR("1,3", ga("CUDA_VISIBLE_DEVICES"), "what CUDA in a reads");
    CHECK_STR("1,3", ga("HIP_VISIBLE_DEVICES"), "what HIP in a reads");
    CHECK(ga("ROCR_VISIBLE_DEVICES") == NULL,
          "ROCr's variable is left to the process: its HSA runtime is shared");
    CHECK_STR("0,1,2", gb("CUDA_VISIBLE_DEVICES"), "CUDA wants commas, not ranges");
    char list[64];
    CHECK_EQ(0, vlcs_ctx_get_gpus(b, list, sizeof list), "read back");
    CHECK_STR("0-2", list, "b's GPUs");
    vlcs_ctx *never = vlcs_ctx_create("never");
    CHECK_EQ(1, vlcs_ctx_get_gpus(never, list, sizeof list), "GPUs never set");
    CHECK_STR("", list, "no list");
    CHECK_EQ(0, vlcs_ctx_set_gpus(b, ""), "hide every GPU");
    CHECK_EQ(0, vlcs_ctx_get_gpus(b, list, sizeof list), "read back");
    CHECK_STR("", list, "none");
    CHECK_STR("", gb("CUDA_VISIBLE_DEVICES"), "hidden");
    CHECK(getenv("CUDA_VISIBLE_DEVICES") == NULL || strcmp(getenv("CUDA_VISIBLE_DEVICES"), "1,3"),
          "the base is untouched");
    CHECK_EQ(0, vlcs_ctx_set_gpus(b, "0-1023"), "the longest list there is");
    const char *all = gb("CUDA_VISIBLE_DEVICES");
    CHECK(all != NULL && strncmp(all, "0,1,2,", 6) == 0 && strstr(all, ",1022,1023") != NULL,
          "every id written out");
    CHECK_ERR(vlcs_ctx_set_gpus(a, "x"), "malformed");
    CHECK_ERR(vlcs_ctx_set_gpus(a, NULL), "NULL");
    PASS("gpu env");
    return 0;
}

typedef int (*dev_fn)(int *);

static int device_part(void)
{
    const char *names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
    const char *found = NULL;
    for (int i = 0; i < 3 && !found; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (h == NULL)
            h = dlopen(names[i], RTLD_NOW);
        if (h != NULL)
            found = names[i];
    }
    if (found == NULL) {
        printf("SKIP: no CUDA runtime (libcudart.so.13/12/11.0) on this machine, so no GPU to "
               "select\n");
        return 77;
    }
    CHECK_EQ(0, vlcs_service_add(found), "CUDA runtime as a service");
    dev_fn get = (dev_fn)dlsym(RTLD_DEFAULT, "cudaGetDevice");
    int count = 0;
    int (*get_count)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cudaGetDeviceCount");
    if (get_count == NULL || get_count(&count) != 0 || count < 1) {
        printf("SKIP: %s loads but reports no GPU\n", found);
        return 77;
    }
    int last = count - 1, dev = -1;
    vlcs_ctx *g = vlcs_ctx_create("gpu");
    char list[16];
    snprintf(list, sizeof list, "%d", last);
    CHECK_EQ(0, vlcs_ctx_set_gpus(g, list), "set");
    CHECK_EQ(0, get(&dev), "cudaGetDevice");
    int before = dev;
    CHECK_EQ(0, vlcs_enter(g), "enter");
    CHECK_EQ(0, get(&dev), "cudaGetDevice");
    CHECK_EQ(last, dev, "entering made the context's GPU current");
    CHECK_EQ(0, vlcs_leave(), "leave");
    CHECK_EQ(0, get(&dev), "cudaGetDevice");
    CHECK_EQ(before, dev, "leaving restored the previous device");
    printf("%d GPU(s); context on GPU %d\n", count, last);
    PASS("gpu device");
    return 0;
}

/* The hooks' enter and leave, nested, against a stand-in runtime. */
static int fake_part(void)
{
    CHECK_EQ(0, vlcs_service_add(FAKE_CUDART_LIB), "the stand-in runtime as a service");
    dev_fn get = (dev_fn)dlsym(RTLD_DEFAULT, "cudaGetDevice");
    CHECK(get != NULL, "the service is global in the base");
    vlcs_ctx *a = vlcs_ctx_create("a"), *none = vlcs_ctx_create("none"),
             *b = vlcs_ctx_create("b");
    CHECK_EQ(0, vlcs_ctx_set_gpus(a, "3,4"), "a");
    CHECK_EQ(0, vlcs_ctx_set_gpus(none, ""), "none");
    CHECK_EQ(0, vlcs_ctx_set_gpus(b, "5"), "b");
    vlcs_ctx *plain = vlcs_ctx_create("plain"); /* GPUs never set */
    int dev = -1;
    get(&dev);
    CHECK_EQ(0, dev, "device 0 before");
    CHECK_EQ(0, vlcs_enter(a), "enter a");
    get(&dev);
    CHECK_EQ(3, dev, "a's first GPU is current");
    CHECK_EQ(0, vlcs_enter(none), "enter none");
    get(&dev);
    CHECK_EQ(3, dev, "a context with no GPU leaves the device alone");
    CHECK_EQ(0, vlcs_enter(plain), "enter plain");
    CHECK_EQ(0, vlcs_enter(b), "enter b");
    get(&dev);
    CHECK_EQ(5, dev, "b's GPU");
    CHECK_EQ(0, vlcs_leave(), "leave b");
    get(&dev);
    CHECK_EQ(3, dev, "back to a's");
    CHECK_EQ(0, vlcs_leave(), "leave plain");
    CHECK_EQ(0, vlcs_leave(), "leave none");
    CHECK_EQ(0, vlcs_leave(), "leave a");
    get(&dev);
    CHECK_EQ(0, dev, "the device before the first enter is restored");
    PASS("gpu hooks with a stand-in runtime");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "device") == 0)
        return device_part();
    if (argc > 1 && strcmp(argv[1], "fake") == 0)
        return fake_part();
    return env_part();
}
