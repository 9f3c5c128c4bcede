// Writes through std::cout, its last line without a newline: libstdc++
// made std::cout when it loaded, on the context's stdout (test_stdio_kept).
#include <iostream>

int main()
{
    std::cout << "from std::cout" << std::endl;
    std::cout << "unflushed";
}
