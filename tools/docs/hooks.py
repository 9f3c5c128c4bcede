"""MkDocs hooks for the documentation site (mkdocs.yml).

- The C reference: the marker ``<!-- vlcs.h -->`` in a page becomes every
  documented declaration of include/vlcs.h, each under its name with the
  comment above it, in the header's order.
- Links from the pages to files of the tree outside docs/ (``../src/x.c``)
  work on GitHub, where the pages are read in place; on the site they
  become the path in code, not a link that leads nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "include" / "vlcs.h"
MARKER = "<!-- vlcs.h -->"

_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")
_DOC_COMMENT = re.compile(r"/\*\*(.*?)\*/\s*\n(.*?)(?=\n\s*\n|\n/\*)", re.S)
_NAME = re.compile(r"\b(vlcs_\w+|VLCS_\w+)\s*(?:\(|\{|;|=|$)", re.M)


def _comment_text(body: str) -> str:
    """A /** ... */ comment's words as Markdown paragraphs."""
    lines = [re.sub(r"^\s*\* ?", "", line) for line in body.strip("\n").splitlines()]
    text = "\n".join(lines).strip()
    text = re.sub(r"^@return\b", "**Returns**", text, flags=re.M)
    text = re.sub(r"^@param (\w+)", r"**`\1`**", text, flags=re.M)
    return text


def _declared_names(code: str) -> list[str]:
    names = []
    for m in _NAME.finditer(code):
        if m.group(1) not in names and not m.group(1).startswith("VLCS_API"):
            names.append(m.group(1))
    return names


def c_reference(header: Path = HEADER) -> str:
    """Markdown for every documented declaration of the header."""
    src = header.read_text()
    out = []
    for m in _DOC_COMMENT.finditer(src):
        comment, code = m.group(1), m.group(2).rstrip()
        code = code.replace("VLCS_API ", "")
        names = _declared_names(code)
        if not names:
            continue
        title = ", ".join(f"`{n}`" for n in names[:3]) + (", ..." if len(names) > 3 else "")
        out += [f"## {title}", "", "```c", code, "```", "", _comment_text(comment), ""]
    api = len(re.findall(r"^VLCS_API ", src, re.M))
    shown = sum(block.count("vlcs_") > 0 for block in out if block.startswith("## "))
    if shown < api // 2:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"the C reference found {shown} documented declarations in {header}")
    return "\n".join(out)


def _tree_links(markdown: str, page_dir: Path) -> str:
    """Links to tree files outside docs/ as the path in code."""

    def fix(m: re.Match[str]) -> str:
        text, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:|^#", target):
            return m.group(0)
        path = target.split("#", 1)[0]
        resolved = (page_dir / path).resolve()
        docs = ROOT / "docs"
        if resolved.is_relative_to(docs) and resolved.suffix == ".md":
            return m.group(0)
        shown = resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else Path(path)
        return f"`{shown}`" if text.strip("`") == str(shown) else f"{text} (`{shown}`)"

    fence = False
    lines = []
    for line in markdown.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fence = not fence
        lines.append(line if fence else _LINK.sub(fix, line))
    return "".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, c_reference())
    page_dir = (Path(config["docs_dir"]) / page.file.src_path).parent
    return _tree_links(markdown, page_dir)
