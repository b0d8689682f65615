package config

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/spadekit/spade/internal/config/internal/keydocgen"
)

// TestKeyDocsAreGenerated: keydocs_gen.go is what the generator writes from today's field comments (run
// `go generate ./internal/config/` after editing a comment), and it documents exactly the keys of Keys.
func TestKeyDocsAreGenerated(t *testing.T) {
	want, err := keydocgen.Source(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(keydocgen.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go generate ./internal/config/`", keydocgen.Output)
	}
	var documented []string
	for key := range keyDocs {
		documented = append(documented, key)
	}
	sort.Strings(documented)
	if !slices.Equal(documented, Keys()) {
		t.Errorf("the generator documents %d keys, Keys lists %d: its walk of Config differs from the keys'", len(documented), len(Keys()))
	}
}

// TestEveryKeyHasADoc: no key without a doc comment, and every doc reads as a sentence for users (a
// capital first letter, a full stop at the end, no Go field name left at its start).
func TestEveryKeyHasADoc(t *testing.T) {
	goName := regexp.MustCompile(`^[A-Z][a-z]+[A-Z][A-Za-z0-9]* `)
	for _, info := range Describe() {
		switch {
		case info.Doc == "":
			t.Errorf("key %s has no doc comment on its field", info.Key)
		case !regexp.MustCompile(`^[A-Z0-9"(]`).MatchString(info.Doc) || info.Doc[len(info.Doc)-1] != '.':
			t.Errorf("key %s: doc %q does not read as a sentence", info.Key, info.Doc)
		case goName.MatchString(info.Doc):
			t.Errorf("key %s: doc %q starts with a Go name: start the comment with the field's name", info.Key, info.Doc)
		}
	}
}
