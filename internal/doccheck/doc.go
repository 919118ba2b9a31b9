// Package doccheck holds the repository-wide documentation checks, run as
// its tests: every file tracked by git is scanned, and a test fails when
//
//   - a file refers to a folder outside the repository (the project
//     workspace's "shared" folder, in any spelling, relative or not);
//   - a file cites a section ("build.md §2.4", "protocol.md §9.2–§9.5") of a
//     page that docs/ does not have, or that the page has no heading for;
//   - a Markdown page links to a file the repository does not track, or to
//     an anchor that its target page has no heading for.
//
// The reference pages under docs/reference/ number their headings ("## 2.",
// "### 2.4"); those numbers are what citations point at, so --help texts and
// code comments can cite a section briefly and a reader can still find it.
// The package has no code of its own beyond these checks.
package doccheck
