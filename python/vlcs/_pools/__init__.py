"""Pools of contexts: ContextPool, ContextPoolExecutor and joblib's
backend (vlcs.dask, a public module, builds on the executor).  See
README.md in this folder; the modules import each other, never this
package."""
