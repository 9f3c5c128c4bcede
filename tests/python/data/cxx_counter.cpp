// A C++ library with process-wide state behind mangled functions, a class
// with a virtual method (its vtable is data: not dispatchable per call).
namespace counter {
static int total;
struct Acc {
    int add(int x);
};
int Acc::add(int x) { return total += x; }
int peek() { return total; }
struct Shape {
    virtual ~Shape() = default;
    virtual int sides() const { return 0; }
};
Shape *make_shape() { return new Shape; }
} // namespace counter
