package docscheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxDocLine is the longest line a reader should have to scroll for, in
// characters, outside code blocks and tables' code cells.
const maxDocLine = 300

// module is the repository's Go module: its go.mod marks the root.
const module = "github.com/fleetsaga/fleetsaga"

// skippedDirs are not the repository's own text: run state, build output,
// the benchmark's generated results, vendored API documents.
var skippedDirs = map[string]bool{
	".git": true, ".stack": true, "bin": true, "bench/results": true, "fleet/openapi/specs": true,
}

// upstream names the repositories whose source our comments cite. A path
// right after one of them (in the same sentence) is theirs, as in omicron's
// schema folder or the MCO's cmd folder; paths whose first folder we do not
// have are theirs anyway. Names of services we also name in our own words
// (MGS, Nexus, Temporal) are not here: they would hide our own paths.
var upstream = regexp.MustCompile(`(?i)\b(omicron|hubris|management-gateway-service|dropshot|wicketd|sdcadm|sdc-[a-z-]+|triton-[a-z-]+|smartos-live|machine-config-operator|mco|openshift|temporalio|upstream)\b`)

// fileRef is a path a reader would open: a folder's path and a file name
// with one of the extensions below, a folder's path ending in a slash, or
// a bare Go or Markdown file name. A ":line" after it is not part of it.
var fileRef = regexp.MustCompile(`(?:^|[\s(\[{"'` + "`" + `,;])((?:\.{1,2}/)?(?:[A-Za-z0-9_.-]+/)+(?:[A-Za-z0-9_.-]+\.(?:go|md|yaml|yml|sql|sh|json|txt|service|env|png|mod)|)|[A-Za-z0-9_.-]+\.(?:go|md))(?:$|[\s)\]}"'` + "`" + `,;:.!?])`)

var (
	issueRef = regexp.MustCompile(`(?i)\bissues?\s+#?\d+|(?:^|[\s(\[,])#\d+\b`)
	noteRef  = regexp.MustCompile(`\b(?:DOMAIN|DESIGN)(?:\.md)?\b|\.\./shared/`)
	// A section sign is ours only after one of our docs' names.
	docSection  = regexp.MustCompile(`([A-Za-z0-9_/.-]+\.md)\b[^§]*§`)
	sectionName = regexp.MustCompile(`§[A-Z0-9][A-Z0-9.]*`)
	mdLink      = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan    = regexp.MustCompile("`([^`\n]+)`")
	lineSuffix  = regexp.MustCompile(`:\d+(-\d+)?$`)
	pathSpan    = regexp.MustCompile(`^(?:\.{1,2}/)?(?:[A-Za-z0-9_.-]+/)+(?:[A-Za-z0-9_.-]+\.(?:go|md|yaml|yml|sql|sh|json|txt|service|env|png|mod)|)$|^[A-Za-z0-9_.-]+\.(?:go|md)$`)
)

// repo is the module's tree as this test sees it.
type repo struct {
	root      string
	top       map[string]bool     // top-level entries: a path starting with one is ours
	made      []string            // .gitignore's plain paths: made by a run, not kept
	basenames map[string][]string // file name -> its paths, for bare names
}

func loadRepo(t *testing.T) *repo {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := wd
	for {
		if mod, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil && strings.HasPrefix(string(mod), "module "+module+"\n") {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no module root above " + wd)
		}
		root = parent
	}
	r := &repo{root: root, top: map[string]bool{}, basenames: map[string][]string{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && !skippedDirs[e.Name()] {
			r.top[e.Name()] = true
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, ".gitignore")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.ContainsAny(l, "*?[!#") {
				r.made = append(r.made, strings.TrimPrefix(l, "/"))
			}
		}
	}
	// Bare names may be generated output too (bench/results' results.md).
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".stack") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			r.basenames[d.Name()] = append(r.basenames[d.Name()], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// walk calls f with each file's slash path relative to the root.
func (r *repo) walk(t *testing.T, f func(rel string)) {
	t.Helper()
	err := filepath.WalkDir(r.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, r.root+string(filepath.Separator)))
		if d.IsDir() {
			if p != r.root && (skippedDirs[rel] || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		f(rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (r *repo) exists(rel string) bool {
	rel = strings.TrimPrefix(rel, "./")
	for _, m := range r.made {
		if rel == strings.TrimSuffix(m, "/") || strings.HasPrefix(rel, strings.TrimSuffix(m, "/")+"/") {
			return true
		}
	}
	_, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(rel)))
	return err == nil
}

// missing says whether ref, named in file (slash path), is one of ours
// that does not exist. Paths of other repositories are not ours.
func (r *repo) missing(file, ref, before string) bool {
	dir := filepath.ToSlash(filepath.Dir(file))
	if !strings.Contains(strings.TrimSuffix(ref, "/"), "/") && !strings.HasSuffix(ref, "/") {
		// A bare name: in the same folder, or anywhere in the tree.
		if strings.HasPrefix(ref, ".") || upstreamBefore(before) {
			return false
		}
		return !r.exists(dir+"/"+ref) && len(r.basenames[ref]) == 0
	}
	if upstreamBefore(before) {
		return false
	}
	first := strings.SplitN(ref, "/", 2)[0]
	switch {
	case first == ".":
		return !r.exists(ref) && !r.exists(filepath.ToSlash(filepath.Join(dir, ref)))
	case first == "..":
		return !r.exists(filepath.ToSlash(filepath.Join(dir, ref)))
	case r.top[first]:
		return !r.exists(ref) && !r.exists(dir+"/"+ref)
	case r.exists(dir + "/" + first):
		return !r.exists(dir + "/" + ref)
	}
	return false // not a path of this repository
}

// upstreamBefore says whether the sentence before a path names another
// repository, so that the path is that repository's.
func upstreamBefore(before string) bool {
	if i := strings.LastIndexAny(before, ";"); i >= 0 {
		before = before[i+1:]
	}
	if i := strings.LastIndex(before, ". "); i >= 0 {
		before = before[i+2:]
	}
	if len(before) > 80 {
		before = before[len(before)-80:]
	}
	return upstream.MatchString(before)
}

// hasSection says whether doc (named in file) has a heading naming sec.
func (r *repo) hasSection(file, doc, sec string) bool {
	for _, p := range []string{doc, filepath.ToSlash(filepath.Join(filepath.Dir(file), doc))} {
		b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(p)))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "#") && strings.Contains(l, " "+sec+" ") {
				return true
			}
		}
	}
	return false
}

type finding struct{ where, what string }

// TestPointersResolve: every Go comment names files that exist and cites
// neither issue numbers nor notes outside the repository.
func TestPointersResolve(t *testing.T) {
	r := loadRepo(t)
	var found []finding
	fset := token.NewFileSet()
	r.walk(t, func(rel string) {
		if !strings.HasSuffix(rel, ".go") || strings.Contains(rel, "/testdata/") {
			return
		}
		f, err := parser.ParseFile(fset, filepath.Join(r.root, rel), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
		}
		for _, cg := range f.Comments {
			var lines []string
			for _, c := range cg.List {
				lines = append(lines, c.Text)
			}
			found = append(found, r.checkCommentGroup(rel, fset.Position(cg.Pos()).Line, lines)...)
		}
	})
	report(t, found, "comments")
}

// checkCommentGroup checks one comment group, its lines numbered from
// first. The text before a line gives a path at its start its sentence,
// and a citation may break across lines ("issue" / "14").
func (r *repo) checkCommentGroup(file string, first int, lines []string) []finding {
	var out []finding
	var before strings.Builder
	for i, l := range lines {
		text := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(l, "*/"), "//"), "/*")
		out = append(out, r.checkComment(file, fmt.Sprintf("%s:%d", file, first+i), before.String(), text)...)
		before.WriteString(text + " ")
	}
	if m := issueRef.FindString(strings.Join(strings.Fields(before.String()), " ")); m != "" {
		out = append(out, finding{fmt.Sprintf("%s:%d", file, first), "cites an issue number: " + m})
	}
	return out
}

func (r *repo) checkComment(file, where, prev, text string) []finding {
	var out []finding
	for _, m := range fileRef.FindAllStringSubmatchIndex(text, -1) {
		ref := text[m[2]:m[3]]
		if r.missing(file, ref, prev+text[:m[2]]) {
			out = append(out, finding{where, "names a missing file: " + ref})
		}
	}
	if m := noteRef.FindString(text); m != "" {
		out = append(out, finding{where, "cites a note outside the repository: " + m})
	}
	if i := strings.Index(text, "§"); i >= 0 {
		m := docSection.FindStringSubmatch(text[:i+len("§")])
		if m == nil {
			out = append(out, finding{where, "cites a section (§) of no document in the repository"})
		} else {
			for _, sec := range sectionName.FindAllString(text[i:], -1) {
				if !r.hasSection(file, m[1], sec) {
					out = append(out, finding{where, m[1] + " has no section " + sec})
				}
			}
		}
	}
	return out
}

// TestDocsReadAndResolve: every Markdown file of ours has lines a reader
// need not scroll, relative links that open, and code spans naming only
// files that exist.
func TestDocsReadAndResolve(t *testing.T) {
	r := loadRepo(t)
	var found []finding
	r.walk(t, func(rel string) {
		if !strings.HasSuffix(rel, ".md") {
			return
		}
		b, err := os.ReadFile(filepath.Join(r.root, rel))
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, r.checkDoc(rel, string(b))...)
	})
	report(t, found, "docs lines")
}

func (r *repo) checkDoc(file, text string) []finding {
	var out []finding
	dir := filepath.ToSlash(filepath.Dir(file))
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		where := fmt.Sprintf("%s:%d", file, i+1)
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if n := utf8.RuneCountInString(proseOf(line)); n > maxDocLine {
			out = append(out, finding{where, fmt.Sprintf("line of %d characters (at most %d)", n, maxDocLine)})
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if !r.exists(filepath.ToSlash(filepath.Join(dir, target))) {
				out = append(out, finding{where, "broken link: " + m[1]})
			}
		}
		for _, m := range codeSpan.FindAllStringSubmatchIndex(line, -1) {
			span := strings.TrimSpace(line[m[2]:m[3]])
			span = lineSuffix.ReplaceAllString(span, "")
			if !pathSpan.MatchString(span) {
				continue
			}
			if r.missing(file, span, line[:m[0]]) {
				out = append(out, finding{where, "names a missing file: " + span})
			}
		}
	}
	return out
}

// proseOf is what a reader reads of a line: a table row without its
// cells that are only code (commands, paths, names).
func proseOf(line string) string {
	if !strings.HasPrefix(strings.TrimSpace(line), "|") {
		return line
	}
	var keep []string
	for _, cell := range strings.Split(line, "|") {
		c := strings.TrimSpace(cell)
		if strings.HasPrefix(c, "`") && strings.HasSuffix(c, "`") && strings.Count(c, "`") == 2 {
			continue
		}
		keep = append(keep, cell)
	}
	return strings.Join(keep, "|")
}

func report(t *testing.T, found []finding, what string) {
	t.Helper()
	sort.Slice(found, func(i, j int) bool { return found[i].where < found[j].where })
	for _, f := range found {
		t.Errorf("%s: %s", f.where, f.what)
	}
	if len(found) > 0 {
		t.Logf("%d offending %s", len(found), what)
	}
}
