// Package docs holds the reference pages; its tests check them against the repository: every relative
// link resolves, architecture.md's formula index names functions that exist, its table list is the
// schemas, and its layout names every package.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/spadekit/spade/schemas"
)

// root is the repository root, relative to this package.
const root = ".."

// pages returns the markdown files whose links are checked: the README, HACKING.md and docs/*.md.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md pages")
	}
	return append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "HACKING.md")}, docs...)
}

// read returns a file's text.
func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	fence      = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	inlineLink = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
)

// prose returns a markdown text without its fenced blocks and code spans, whose brackets are not links.
func prose(text string) string {
	return codeSpan.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
}

// links returns the targets of a page's inline links.
func links(text string) []string {
	var out []string
	for _, m := range inlineLink.FindAllStringSubmatch(prose(text), -1) {
		out = append(out, m[1])
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a markdown file's headings (fenced blocks left out).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		out[slug(m[1])] = true
	}
	return out
}

// TestMarkdownLinksResolve: every relative link of the README, HACKING.md and docs/*.md names a file or
// directory that exists, and a link's #anchor into a markdown file names one of its headings.
func TestMarkdownLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range pages(t) {
		text := read(t, page)
		for _, target := range links(text) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
			}
			checked++
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(read(t, file))[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", page, target, file, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the link pattern no longer matches the pages")
	}
}

// TestLinkCheckerSeesBrokenLinks: the checker's parts find a link, ignore one inside code, and tell a
// heading's anchor from a missing one, so the test above can fail.
func TestLinkCheckerSeesBrokenLinks(t *testing.T) {
	text := "See [the lake](lake.md#the-layout) and `[not a link](x.md)`.\n\n```\n[nor](y.md)\n```\n"
	if got := links(text); !slices.Equal(got, []string{"lake.md#the-layout"}) {
		t.Errorf("links = %q, want only lake.md#the-layout", got)
	}
	a := anchors("# spade\n## The layout: `step=N`\n```\n# not a heading\n```\n")
	if !a["the-layout-stepn"] || !a["spade"] || a["not-a-heading"] {
		t.Errorf("anchors = %v", a)
	}
}

// section returns the text of a `## title` section of markdown, up to the next `## ` heading.
func section(t *testing.T, text, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("architecture.md has no %q section", "## "+title)
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// architecture returns docs/architecture.md.
func architecture(t *testing.T) string {
	return read(t, filepath.Join(root, "docs", "architecture.md"))
}

// TestTablesAreTheSchemas: the "Tables" section lists exactly the tables schemas registers.
func TestTablesAreTheSchemas(t *testing.T) {
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^- `([a-z_]+)`:").FindAllStringSubmatch(section(t, architecture(t), "Tables"), -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	if want := schemas.Names(); !slices.Equal(listed, want) {
		t.Errorf("docs/architecture.md, \"Tables\", lists %v; schemas registers %v", listed, want)
	}
}

// indexEntry is one code reference of the formula index.
var indexEntry = regexp.MustCompile("`([^`]+)`")

// TestFormulaIndexEntriesExist: every entry of the formula index names something that exists: a Go
// function or method of the named package directory, a function of the named Python file, or a file.
func TestFormulaIndexEntriesExist(t *testing.T) {
	_, index, ok := strings.Cut(section(t, architecture(t), "Formulas"), "### Formula index")
	if !ok {
		t.Fatal("architecture.md's Formulas section has no \"### Formula index\"")
	}
	entries := 0
	for _, line := range strings.Split(index, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[2], "`") {
			continue
		}
		for _, m := range indexEntry.FindAllStringSubmatch(cells[2], -1) {
			entries++
			if err := entryExists(m[1]); err != "" {
				t.Errorf("formula index entry %s: %s", m[1], err)
			}
		}
	}
	if entries < 20 {
		t.Errorf("the formula index has %d entries; the table's layout no longer parses", entries)
	}
}

// TestFormulaIndexCheckerRejectsMissing: the entry checker refuses a function, a method and a Python
// function that do not exist, so the test above can fail.
func TestFormulaIndexCheckerRejectsMissing(t *testing.T) {
	for _, entry := range []string{"internal/play.NoSuchReturn", "internal/outcome.Rules.NoSuchMethod",
		"internal/outcome.NoSuchType.Counts", "stages/grpo/trainer/spade_trainer/loss.py:no_such_loss", "sql/no_such.sql"} {
		if entryExists(entry) == "" {
			t.Errorf("entryExists(%q) found it", entry)
		}
	}
	for _, entry := range []string{"internal/play.EpisodeReturn", "internal/outcome.Rules.Counts"} {
		if err := entryExists(entry); err != "" {
			t.Errorf("entryExists(%q): %s", entry, err)
		}
	}
}

// entryExists checks one formula index entry and returns what is wrong with it, or "".
func entryExists(entry string) string {
	if file, fn, ok := strings.Cut(entry, ".py:"); ok {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file+".py")))
		if err != nil {
			return err.Error()
		}
		if !regexp.MustCompile(`(?m)^def ` + regexp.QuoteMeta(fn) + `\(`).Match(b) {
			return file + ".py defines no function " + fn
		}
		return ""
	}
	if strings.HasSuffix(entry, ".sql") {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(entry))); err != nil {
			return err.Error()
		}
		return ""
	}
	slash := strings.LastIndex(entry, "/")
	dir, name, ok := strings.Cut(entry[slash+1:], ".")
	if slash < 0 || !ok {
		return "want package-dir.Function or package-dir.Type.Method"
	}
	dir = entry[:slash+1] + dir
	recv, fn, method := strings.Cut(name, ".")
	if !method {
		recv, fn = "", name
	}
	files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
	if err != nil || len(files) == 0 {
		return "no Go package in " + dir
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err.Error()
		}
		for _, d := range f.Decls {
			if fd, isFunc := d.(*ast.FuncDecl); isFunc && fd.Name.Name == fn && receiver(fd) == recv {
				return ""
			}
		}
	}
	if recv != "" {
		return dir + " has no method " + recv + "." + fn
	}
	return dir + " has no function " + fn
}

// receiver returns the name of a method's receiver type, or "" for a function.
func receiver(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

// TestLayoutNamesEveryPackage: the layout block of architecture.md names every directory that holds Go
// code (testdata left out) and every top-level directory, and names only directories that exist.
func TestLayoutNamesEveryPackage(t *testing.T) {
	body := section(t, architecture(t), "Layout")
	_, block, _ := strings.Cut(body, "```\n")
	block, _, _ = strings.Cut(block, "```")
	named := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		path := strings.Fields(line)[0]
		if !strings.HasSuffix(path, "/") {
			t.Errorf("layout line %q does not start with a directory", line)
			continue
		}
		path = strings.TrimSuffix(path, "/")
		named[path] = true
		if info, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil || !info.IsDir() {
			t.Errorf("layout names %s/, which is not a directory", path)
		}
	}
	want := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" ||
				name == "lake" || name == "node_modules" || name == "__pycache__") {
				return filepath.SkipDir
			}
			if rel != "." && !strings.Contains(rel, "/") {
				want[rel] = true
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && strings.Contains(rel, "/") {
			want[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range want {
		if !covered(named, dir) {
			t.Errorf("docs/architecture.md, \"Layout\", does not name %s/", dir)
		}
	}
}

// covered reports whether the layout accounts for dir: it names dir itself; or dir is a top-level
// directory and the layout names directories inside it; or the layout names dir's top-level directory
// and that is not one of the module's layers (cmd, internal, stages), whose packages are listed one by
// one.
func covered(named map[string]bool, dir string) bool {
	if named[dir] {
		return true
	}
	top, rest, nested := strings.Cut(dir, "/")
	if !nested {
		for path := range named {
			if strings.HasPrefix(path, dir+"/") {
				return true
			}
		}
		return false
	}
	return rest != "" && named[top] && top != "cmd" && top != "internal" && top != "stages"
}
