/* A stand-in for the CUDA runtime's device calls, to test the GPU hooks of
 * the Service context without a GPU: a per-thread current device. */
static __thread int current;

int cudaSetDevice(int dev)
{
    current = dev;
    return 0;
}

int cudaGetDevice(int *dev)
{
    *dev = current;
    return 0;
}
