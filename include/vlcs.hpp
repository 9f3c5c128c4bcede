// vlcs.hpp - header-only C++ wrapper of vlcs.h: RAII and exceptions.
//
//   vlcs::Runtime rt;                       // initialises, throws on failure
//   vlcs::Context ctx("blas");
//   ctx.set_allowed_cpus("0-3");            // or {0, 1, 2, 3}
//   ctx.setenv("OPENBLAS_NUM_THREADS", "4");
//   vlcs::Loader blas(ctx, "libopenblas.so.0");
//   auto dgemm = blas.sym<dgemm_t>("dgemm_");
//   {
//       auto in = ctx.enter();              // this thread runs on 0-3 until scope end
//       dgemm(...);
//   }
#ifndef VLCS_HPP
#define VLCS_HPP

#include <exception>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "vlcs.h"

namespace vlcs {

// Every failure of the C API, with vlcs_error()'s sentence as what(),
// vlcs_errcode()'s kind of failure as code() (VLCS_E_LIMIT, ...) and, for a
// limit, vlcs_errlimit()'s which one as limit() (VLCS_LIMIT_NAMESPACES, ...).
class Error : public std::runtime_error {
public:
    explicit Error(const std::string &what, vlcs_errcode_t code = VLCS_E_SYSTEM,
                   vlcs_limit_t limit = VLCS_LIMIT_NONE)
        : std::runtime_error(what), code_(code), limit_(limit)
    {
    }
    vlcs_errcode_t code() const noexcept { return code_; }
    vlcs_limit_t limit() const noexcept { return limit_; }

private:
    vlcs_errcode_t code_;
    vlcs_limit_t limit_;
};

namespace detail {
[[noreturn]] inline void fail()
{
    throw Error(vlcs_error(), static_cast<vlcs_errcode_t>(vlcs_errcode()),
                static_cast<vlcs_limit_t>(vlcs_errlimit()));
}
inline void check(int rc)
{
    if (rc != 0)
        fail();
}
} // namespace detail

// The process-wide runtime.  Creating one is optional (contexts initialise
// vlcs themselves); it reports initialisation problems early.
class Runtime {
public:
    Runtime() { detail::check(vlcs_init()); }
    static const char *version() { return vlcs_version(); }
    // The context the calling thread is in, or nullptr.
    static vlcs_ctx *current() { return vlcs_current(); }
    // Node-wide mode: elastic contexts lend across the node's processes
    // (see vlcs_init_opts in vlcs.h).
    static void join_node()
    {
        vlcs_opts o{};
        o.size = sizeof o;
        o.node = 1;
        detail::check(vlcs_init_opts(&o));
    }
    // The ledger's path, or nullptr when node-wide mode is off.
    static const char *node_ledger() { return vlcs_node_ledger(); }
};

// Leaves the context when it goes out of scope.
class Scope {
public:
    explicit Scope(vlcs_ctx *c) { detail::check(vlcs_enter(c)); }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;
    ~Scope() { vlcs_leave(); }
};

class Context {
public:
    explicit Context(const char *name = nullptr) : c_(vlcs_ctx_create(name))
    {
        if (c_ == nullptr)
            detail::fail();
    }
    explicit Context(const std::string &name) : Context(name.c_str()) {}
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;
    Context(Context &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    // Destroys the context, unloading its libraries; a thread still inside
    // makes this a no-op rather than an exception from a destructor.
    ~Context()
    {
        if (c_ != nullptr)
            vlcs_ctx_destroy(c_);
    }

    void set_allowed_cpus(const std::string &cpulist)
    {
        detail::check(vlcs_ctx_set_cpus(c_, cpulist.c_str()));
    }
    void set_allowed_cpus(std::initializer_list<int> cpus)
    {
        std::string list;
        for (int cpu : cpus)
            list += (list.empty() ? "" : ",") + std::to_string(cpu);
        set_allowed_cpus(list);
    }
    std::string allowed_cpus() const
    {
        char buf[4096];
        if (vlcs_ctx_get_cpus(c_, buf, sizeof buf) < 0)
            detail::fail();
        return buf;
    }
    /* Elastic: borrow idle elastic contexts' CPUs up to `bound` while busy
     * ("" makes it static again); weight 0 = the home's size. */
    void set_elastic(const std::string &bound, unsigned weight = 0)
    {
        detail::check(vlcs_ctx_set_elastic(c_, bound.c_str(), weight));
    }
    /* `units` more iterations done in it: an elastic context keeps a lend
     * only where its rate rose with it (vlcs_ctx_progress). */
    void progress(unsigned long long units = 1) { detail::check(vlcs_ctx_progress(c_, units)); }
    vlcs_progress_t progress_info() const
    {
        vlcs_progress_t p;
        detail::check(vlcs_ctx_get_progress(c_, &p));
        return p;
    }
    /* The CPUs and environment `vlcs tune` planned for `task` (plan.json). */
    void apply_plan(const std::string &path, const std::string &task)
    {
        detail::check(vlcs_ctx_apply_plan(c_, path.c_str(), task.c_str()));
    }
    /* VLCS_CPUSET_CURRENT, _HOME, _BOUND or _LENT, as a CPU list. */
    std::string cpuset(vlcs_cpuset_t which) const
    {
        char buf[4096];
        if (vlcs_ctx_get_cpuset(c_, which, buf, sizeof buf) < 0)
            detail::fail();
        return buf;
    }
    void set_gpus(const std::string &gpulist) { detail::check(vlcs_ctx_set_gpus(c_, gpulist.c_str())); }
    void setenv(const std::string &name, const std::string &value)
    {
        detail::check(vlcs_ctx_setenv(c_, name.c_str(), value.c_str()));
    }
    void unsetenv(const std::string &name) { detail::check(vlcs_ctx_unsetenv(c_, name.c_str())); }
    /* Run an unmodified program inside the context and wait for it; its exit
     * status (vlcs_ctx_exec).  Throws vlcs::Error if it cannot run. */
    int exec(const std::vector<std::string> &argv)
    {
        std::vector<char *> args;
        for (const std::string &a : argv)
            args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        int status = vlcs_ctx_exec(c_, args.data());
        if (status < 0)
            detail::fail();
        return status;
    }
    /* Descriptors for the context's stdin, stdout, stderr (-1: as they are),
     * before its first load (vlcs_ctx_set_stdio). */
    void set_stdio(int in_fd, int out_fd, int err_fd)
    {
        detail::check(vlcs_ctx_set_stdio(c_, in_fd, out_fd, err_fd));
    }
    int thread_count() const
    {
        int n = vlcs_ctx_thread_count(c_);
        if (n < 0)
            detail::fail();
        return n;
    }
    std::string name() const { return vlcs_ctx_name(c_); }
    // Keep the namespace loaded when the context dies (something outside
    // still refers to its code); reason appears in vlcs_error().
    void keep_loaded(const std::string &reason)
    {
        detail::check(vlcs_ctx_keep_loaded(c_, reason.c_str()));
    }

    // The calling thread runs in this context until the returned guard dies.
    [[nodiscard]] Scope enter() { return Scope(c_); }

    // f() run inside this context on this thread (vlcs_ctx_call), its
    // result returned and its exception rethrown here; a crash in the
    // context's own code (a segmentation fault, abort()) throws vlcs::Error
    // with code() VLCS_E_FAULT, the context broken for good (fault()).
    template <typename F> auto call(F &&f) -> std::invoke_result_t<F &>
    {
        using R = std::invoke_result_t<F &>;
        struct Box {
            F *f;
            std::optional<std::conditional_t<std::is_void_v<R>, char, R>> result;
            std::exception_ptr error; // no exception crosses vlcs's C frames
        } box{&f, std::nullopt, nullptr};
        auto run = [](void *p) -> void * {
            Box *b = static_cast<Box *>(p);
            try {
                if constexpr (std::is_void_v<R>) {
                    (*b->f)();
                    b->result.emplace(0);
                } else {
                    b->result.emplace((*b->f)());
                }
            } catch (...) {
                b->error = std::current_exception();
            }
            return nullptr;
        };
        detail::check(vlcs_ctx_call(c_, run, &box, nullptr));
        if (box.error)
            std::rethrow_exception(box.error);
        if constexpr (!std::is_void_v<R>)
            return std::move(*box.result);
    }
    // What broke the context (vlcs_ctx_fault), or "".
    std::string fault() const
    {
        const char *f = vlcs_ctx_fault(c_);
        return f ? f : "";
    }
    vlcs_ctx *get() const { return c_; }

private:
    vlcs_ctx *c_;
};

// A library opened in a context.  The library stays loaded until its
// context is destroyed (see vlcs_ctx_destroy), so a Loader is only a handle
// and must not outlive its Context.
// transparent=true: the program calls the library directly through a shim
// made by `vlcs shim`, and calls from threads in ctx reach this copy.
class Loader {
public:
    Loader(Context &ctx, const std::string &library, bool transparent = false)
        : h_(transparent ? vlcs_ctx_load_transparent(ctx.get(), library.c_str())
                         : vlcs_ctx_load(ctx.get(), library.c_str()))
    {
        if (h_ == nullptr)
            detail::fail();
    }
    template <typename T> T sym(const std::string &name) const
    {
        void *p = vlcs_ctx_sym(h_, name.c_str());
        if (p == nullptr)
            detail::fail();
        return reinterpret_cast<T>(p);
    }
    void *handle() const { return h_; }

private:
    void *h_;
};

} // namespace vlcs

#endif // VLCS_HPP
