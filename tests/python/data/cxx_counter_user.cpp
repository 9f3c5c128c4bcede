// Calls the C++ library's mangled functions directly; each thread runs in
// its own context, so each reaches its own copy of counter::total.
#include <cstdio>
#include <thread>

#include "vlcs.hpp"

namespace counter {
struct Acc {
    int add(int x);
};
int peek();
} // namespace counter

int main()
{
    vlcs::Context a("a"), b("b");
    vlcs::Loader la(a, "libcxxcounter.so.1", true), lb(b, "libcxxcounter.so.1", true);
    int ra = 0, rb = 0;
    std::thread x([&] {
        auto in = a.enter();
        counter::Acc acc;
        for (int i = 0; i < 3; i++)
            ra = acc.add(1);
    });
    std::thread y([&] {
        auto in = b.enter();
        counter::Acc acc;
        for (int i = 0; i < 5; i++)
            rb = acc.add(10);
    });
    x.join();
    y.join();
    std::printf("a=%d b=%d default=%d\n", ra, rb, counter::peek());
    return 0;
}
