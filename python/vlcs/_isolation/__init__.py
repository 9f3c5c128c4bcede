"""Import isolation: each context imports its own copies of packages, and
Python code of a context sees the context as its process.  See README.md
in this folder; the modules import each other, never this package."""
