#!/usr/bin/env python3
"""Checks that the contract references in the code resolve inside the repository.

Code comments and test names cite the product contract by section (`§10`) and the File Provider rules by
code (`B6`, `C4`, `F11`). Both are explained in the DocC catalogue: `Contract.md` has a `## §N` heading per
section, `FileProviderRules.md` a `### CODE` heading per rule, each followed by the tests that check it.
This script fails (exit 1, one line per problem) when

- a `§N` cited in Sources/ or Tests/ (Swift files and the catalogue's articles) has no `§N` heading in
  Contract.md (a `§` after "RFC NNNN" is another document's section and is skipped);
- a rule code cited in a Swift file of Sources/ or Tests/ has no heading in FileProviderRules.md;
- a test that FileProviderRules.md names under "Checked by" (`Suite.function` (target)) is not a function
  of that suite in that test target;
- a test whose `@Test` display name cites a rule code is not among that rule's "Checked by";
- a doc comment (`///`) of the ChunkCache module (whose catalogue holds the articles) cites a `§N` or a rule code as plain text instead of linking it
  (`<doc:Contract#10-Origins-the-cold-path>`, `<doc:FileProviderRules#B6>`), so the symbol's page points to
  the section that explains it, or links a heading that does not exist.

usage: scripts/check-references.py          (scripts/docs.sh runs it before building the catalogue)
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "Sources/ChunkCache/ChunkCache.docc"
CONTRACT = CATALOGUE / "Contract.md"
RULES = CATALOGUE / "FileProviderRules.md"

# The test target each label of a "Checked by" line names.
TARGETS = {
    "integration": "ChunkCacheIntegrationTests",
    "unit": "ChunkCacheTests",
    "CLI": "ChunkCacheCommandsTests",
    "OriginKit": "OriginKitTests",
    "fuzz corpus": "FuzzTargetsTests",
    "LMDBKit": "LMDBKitTests",
    "FileIO": "FileIOTests",
    "ZstdKit": "ZstdKitTests",
    "SigV4": "SigV4Tests",
}

SECTION = re.compile(r"§(\d+(?:\.\d+)*)")
RFC_BEFORE = re.compile(r"RFC\s*\d+\s*$")
# A rule code: a group letter A-H and a number, not part of a longer word or number (0xA1, H264, A10B).
RULE = re.compile(r"(?<![A-Za-z0-9_])([A-H][0-9]{1,2})(?![A-Za-z0-9_])")
# A link to a heading of the catalogue, and the fragment DocC makes of a heading's text.
DOC_LINK = re.compile(r"<doc:(Contract|FileProviderRules)#([^>]+)>")
FRAGMENT_BREAKS = re.compile(r"[\s\-–—]+")
CHECKED_BY = re.compile(r"^- `([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)` \(([^)]*)\)\s*$")


def headings(path, pattern):
    """The names of the headings of `path` that match `pattern` (one group: the name)."""
    return {m.group(1) for m in re.finditer(pattern, path.read_text(), re.MULTILINE)}


def fragment(heading):
    """The anchor DocC gives a heading: words joined by dashes, without quotes, backticks or `§`."""
    words = "-".join(word for word in FRAGMENT_BREAKS.split(heading.strip()) if word)
    return "".join(c for c in words if c not in "'\"`§")


def anchors(path):
    """The anchors of the `##` and `###` headings of `path`."""
    return {fragment(m.group(1)) for m in re.finditer(r"^###? (.+)$", path.read_text(), re.MULTILINE)}


def unlinked_doc_citations():
    """(where, text) of each `§N` or rule code a doc comment of the ChunkCache module cites outside a link or code span,
    and of each link to a heading that does not exist."""
    targets = {"Contract": anchors(CONTRACT), "FileProviderRules": anchors(RULES)}
    for path in sorted((ROOT / "Sources/ChunkCache").rglob("*.swift")):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            comment = re.match(r"^\s*///(.*)$", line)
            if not comment:
                continue
            where = f"{path.relative_to(ROOT)}:{number}"
            for link in DOC_LINK.finditer(comment.group(1)):
                if link.group(2) not in targets[link.group(1)]:
                    yield where, f"<doc:{link.group(1)}#{link.group(2)}> names no heading of {link.group(1)}.md"
            # Code spans and links are not citations in prose.
            prose = DOC_LINK.sub(" ", re.sub(r"`[^`]*`", " ", comment.group(1)))
            for match in SECTION.finditer(prose):
                if not RFC_BEFORE.search(prose[: match.start()]):
                    yield where, f"§{match.group(1)} in a doc comment: link it as <doc:Contract#…>"
            for match in RULE.finditer(prose):
                yield where, f"rule {match.group(1)} in a doc comment: link it as <doc:FileProviderRules#{match.group(1)}>"


def cited_files():
    """The files whose citations must resolve: Swift sources and tests, and the catalogue's articles."""
    for top in ("Sources", "Tests"):
        yield from sorted((ROOT / top).rglob("*.swift"))
    yield from sorted(CATALOGUE.glob("*.md"))


def citations(path):
    """(line number, kind, name) of each `§N` and rule code cited in `path`."""
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        for match in SECTION.finditer(line):
            if not RFC_BEFORE.search(line[: match.start()]):
                yield number, "section", match.group(1)
        if path.suffix == ".swift":
            for match in RULE.finditer(line):
                yield number, "rule", match.group(1)


def strip_comments_and_strings(source):
    """`source` with comments and string literals blanked (newlines kept), so braces can be counted."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"', re.DOTALL)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)


DECLARATION = re.compile(r"\b(?:struct|class|enum|actor|extension)\s+([A-Za-z_][A-Za-z0-9_.]*)[^{;]*\{")
FUNCTION = re.compile(r"\bfunc\s+([A-Za-z_][A-Za-z0-9_]*)")
TEST_ATTRIBUTE = re.compile(r'@Test\(\s*"((?:\\.|[^"\\\n])*)"')


def tests_by_suite(target):
    """{suite: {function: the rule codes its `@Test` display name cites}} for the Swift files of a test
    target. Every function of a suite is listed (helpers too), with no codes unless it is a test."""
    found = {}
    for path in (ROOT / "Tests" / target).rglob("*.swift"):
        source = path.read_text(errors="replace")
        text = strip_comments_and_strings(source)  # the same length: positions match `source`
        # A test's display name: the first string of the `@Test(` nearest before its `func`.
        names = {}
        for match in TEST_ATTRIBUTE.finditer(source):
            function = FUNCTION.search(text, match.end())
            if function:
                names[function.start()] = match.group(1)
        # Each opening brace of a type declaration pushes its name; a function belongs to the innermost type.
        opens = {m.end() - 1: m.group(1).split(".")[-1] for m in DECLARATION.finditer(text)}
        functions = {m.start(): m.group(1) for m in FUNCTION.finditer(text)}
        stack = []  # the type name of each open brace, or None
        for index, character in enumerate(text):
            if index in functions:
                suite = next((name for name in reversed(stack) if name), None)
                if suite:
                    codes = set(RULE.findall(names.get(index, "")))
                    found.setdefault(suite, {}).setdefault(functions[index], set()).update(codes)
            if character == "{":
                stack.append(opens.get(index))
            elif character == "}" and stack:
                stack.pop()
    return found


def checked_by_entries():
    """(line number, rule code, suite, function, target label) of each test FileProviderRules.md names."""
    rule = None
    for number, line in enumerate(RULES.read_text().splitlines(), 1):
        heading = re.match(r"^### ([A-H][0-9]{1,2})\s*$", line)
        if heading:
            rule = heading.group(1)
        match = CHECKED_BY.match(line)
        if match and rule:
            yield number, rule, match.group(1), match.group(2), match.group(3)


def main():
    sections = headings(CONTRACT, r"^##+ §(\d+(?:\.\d+)*)\b")
    rules = headings(RULES, r"^### ([A-H][0-9]{1,2})\s*$")
    problems = []
    for path in cited_files():
        for number, kind, name in citations(path):
            where = f"{path.relative_to(ROOT)}:{number}"
            if kind == "section" and name not in sections:
                problems.append(f"{where}: §{name} has no section in {CONTRACT.relative_to(ROOT)} (add '## §{name} …')")
            if kind == "rule" and name not in rules:
                problems.append(f"{where}: rule {name} has no entry in {RULES.relative_to(ROOT)} (add '### {name}')")
    for where, problem in unlinked_doc_citations():
        problems.append(f"{where}: {problem}")
    tests = {target: tests_by_suite(target) for target in TARGETS.values() if (ROOT / "Tests" / target).is_dir()}
    listed = set()
    for number, rule, suite, function, label in checked_by_entries():
        where = f"{RULES.relative_to(ROOT)}:{number}"
        target = TARGETS.get(label)
        if target is None:
            problems.append(f"{where}: unknown test target '{label}' (one of: {', '.join(TARGETS)})")
        elif function not in tests.get(target, {}).get(suite, {}):
            problems.append(f"{where}: no test {suite}.{function} in Tests/{target}")
        listed.add((rule, suite, function))
    # The other way round: a test whose display name cites a rule is among the rule's "Checked by".
    labels = {target: label for label, target in TARGETS.items()}
    for target, suites in sorted(tests.items()):
        for suite, functions in sorted(suites.items()):
            for function, codes in sorted(functions.items()):
                for code in sorted(codes - {rule for rule, s, f in listed if (s, f) == (suite, function)}):
                    if code in rules:
                        problems.append(
                            f"{RULES.relative_to(ROOT)}: rule {code} does not list the test citing it: "
                            f"add '- `{suite}.{function}` ({labels[target]})' under '### {code}'")
    for problem in problems:
        print(problem)
    cited = sum(1 for path in cited_files() for _ in citations(path))
    named = sum(1 for _ in checked_by_entries())
    status = f"{len(problems)} unresolved" if problems else "all resolve"
    print(f"references: {cited} citations of §N and rule codes, {named} tests named by the rules: {status}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
