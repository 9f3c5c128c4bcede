// std::thread::hardware_concurrency from a C++ library in a context.
#include <thread>
extern "C" unsigned probe_hardware_concurrency() { return std::thread::hardware_concurrency(); }
