"""Every reference in README.md, docs/*.md and bench/README.md resolves in this repository: a
Markdown link to a file (and its #anchor to a heading there), a path or file name in backquotes
or prose to a file or folder of the tree, and a section reference (`README.md#messages`, README's
"Messages") to a heading. Numbered sections (§2, "section 2") are not a thing these docs have,
nor a DESIGN file; such references name nothing a reader can open.

Pure text: no build and no package needed.
"""

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")),
        "bench/README.md", "fuzz/README.md"]
# What a build or an install makes (not in the tree): paths under these may be named.
MADE = ("build", "build-python", "build-fuzz", ".venv", "dist")
EXTENSIONS = ("md", "py", "cpp", "hpp", "h", "cmake", "sh", "toml", "txt", "dict", "json", "yml",
              "cfg")


def tree():
    """The repository's files, as git knows them (tracked and new), as posix paths."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {line for line in listed.splitlines() if (REPO / line).exists()}


FILES = tree()
FOLDERS = {str(Path(f).parents[k].as_posix()) for f in FILES for k in range(len(Path(f).parts) - 1)}


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path):
    text = re.sub(r"```.*?```", "", (REPO / path).read_text(), flags=re.S)
    return [m.group(1) for m in re.finditer(r"^#{1,6} +(.+?) *$", text, flags=re.M)]


def resolves(name, doc):
    """True if `name` (a path, a folder, a file name, a glob) is in the tree."""
    name = name.rstrip("/")
    if name.startswith(MADE) or name.startswith(tuple(f"{m}/" for m in MADE)):
        return True
    for base in (Path(doc).parent.as_posix(), ""):
        candidate = f"{base}/{name}" if base not in ("", ".") else name
        candidate = re.sub(r"^\./", "", candidate)
        if "*" in candidate:
            pattern = re.compile(re.escape(candidate).replace(r"\*", "[^/]*") + "$")
            if any(pattern.match(f) for f in FILES):
                return True
        if candidate in FILES or candidate in FOLDERS:
            return True
    # A bare file name (ops.cpp) or a path's tail (core/plan.cpp): some file of the tree.
    return any(f == name or f.endswith("/" + name) for f in FILES)


def prose(path):
    """The document without its code blocks (commands and code there are not references)."""
    return re.sub(r"```.*?```", "", (REPO / path).read_text(), flags=re.S)


@pytest.mark.parametrize("doc", DOCS)
def test_links_resolve(doc):
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(doc)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        path = path or doc
        if not resolves(path, doc):
            bad.append(target)
        elif anchor and path.endswith(".md"):
            file = path if path in FILES else f"{Path(doc).parent.as_posix()}/{path}"
            if anchor not in {slug(h) for h in headings(file)}:
                bad.append(target)
    assert not bad, f"{doc}: links to nothing in the tree: {bad}"


@pytest.mark.parametrize("doc", DOCS)
def test_paths_resolve(doc):
    text = prose(doc)
    bad = set()
    names = re.findall(r"`([^`\s]+)`", text)
    # A file name in prose, outside backquotes: seeds.py, docs/divergences.md.
    names += re.findall(rf"(?<![\w/.`-])([\w./*-]+\.(?:{'|'.join(EXTENSIONS)}))\b(?![\w`(])",
                        re.sub(r"`[^`]*`", "", text))
    for name in names:
        name = name.rstrip(".,;:)")
        if name.startswith(("/", "-", "http")) or not re.fullmatch(r"[A-Za-z0-9_./*-]+", name):
            continue  # an absolute path (/dev/null), a flag, a URL, an expression, t²/2
        if re.fullmatch(r"\.\w+", name):
            continue  # an extension alone: `.txt`
        module = re.fullmatch(r"(.+/\w+)\.(\w+)", name)  # bench/seeds.time_calls: a function
        if module and not re.search(rf"\.({'|'.join(EXTENSIONS)})$", name):
            name = module.group(1) + ".py"
        is_path = "/" in name or re.search(rf"\.({'|'.join(EXTENSIONS)})$", name)
        if is_path and not re.search(r"\d/\d|[\[\]{}<>$]", name) and not resolves(name, doc):
            bad.add(name)
    assert not bad, f"{doc}: names files or folders the tree does not have: {sorted(bad)}"


@pytest.mark.parametrize("doc", DOCS)
def test_section_references_resolve(doc):
    text = prose(doc)
    numbered = re.findall(r"(§\s*\d[\d.]*|\bsections? \d[\d.]*|\bDESIGN\b[^\n]{0,20})", text)
    assert not numbered, f"{doc}: numbered sections or a DESIGN file the tree lacks: {numbered}"
    # "FILE.md, "Heading"" or "FILE's "Heading"": the heading must be in that file.
    bad = []
    for file, heading in re.findall(r"([\w/.-]+\.md|README)(?:'s|,)? \"([^\"]+)\"", text):
        file = "README.md" if file == "README" else file
        if not resolves(file, doc) or heading not in headings(file if file in FILES else
                                                              f"{Path(doc).parent}/{file}"):
            bad.append(f'{file} "{heading}"')
    assert not bad, f"{doc}: sections that are not headings there: {bad}"


@pytest.mark.parametrize("doc", [d for d in DOCS if d != "bench/README.md"])
def test_uses_are_described_not_numbered(doc):
    # "Seed 000" names a case only bench/README.md defines; elsewhere say what the case is (the
    # pairwise KL matrix of a batch, a VAE's prior term, ...).
    found = re.findall(r"\bseeds? ?\d{3}\b|\bseeds/\d+|blog post's `exp`", prose(doc), flags=re.I)
    assert not found, f"{doc}: {found}"


def test_the_checks_catch_what_they_should():
    assert not resolves("DESIGN.md", "README.md")
    assert resolves("bench/README.md", "README.md") and resolves("README.md", "bench/README.md")
    assert resolves("src/io/", "README.md") and resolves("ops.cpp", "docs/divergences.md")
    assert (slug("Millions of Gaussians: Dask (`gausskl[dask]`)")
            == "millions-of-gaussians-dask-gausskldask")
    assert "Messages" in headings("README.md")
