// A library built on OpenCV's core (Debian's libopencv-core, itself built on
// oneTBB): what a user's image-processing code looks like to vlcs.
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

extern "C" {

// cv::getNumThreads(): OpenCV's TBB arena's concurrency.
int cvt_num_threads(void) { return cv::getNumThreads(); }

// A cv::parallel_for_ over n items, summing i*i; *threads gets how many
// distinct threads ran the body, *arena the body's arena concurrency.
long long cvt_parallel_sum(int n, int *threads, int *arena)
{
    std::atomic<long long> sum{0};
    std::mutex m;
    std::set<std::thread::id> ids;
    std::atomic<int> conc{0};
    cv::parallel_for_(cv::Range(0, n), [&](const cv::Range &r) {
        long long s = 0;
        for (int i = r.start; i < r.end; i++)
            s += (long long)i * i;
        sum += s;
        conc = tbb::this_task_arena::max_concurrency();
        std::lock_guard<std::mutex> g(m);
        ids.insert(std::this_thread::get_id());
    }, n);
    *threads = (int)ids.size();
    *arena = conc;
    return sum;
}

// A default-constructed tbb::task_arena's concurrency once initialised.
int cvt_new_arena(void)
{
    tbb::task_arena a;
    a.initialize();
    return a.max_concurrency();
}

// An entry point of TBB as this copy binds it: the one copy, or a private one.
void *cvt_tbb_entry(void) { return (void *)&tbb::detail::r1::execution_slot; }
}
