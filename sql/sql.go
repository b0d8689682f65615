// Package sqlfiles embeds the analytics queries of sql/ (one dbt-shaped SELECT per file, the file name is
// the model name) so the binary runs them without the source tree; the files stay runnable by hand with
// `spade query -f sql/<name>.sql`.
package sqlfiles

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Names returns every model name (the .sql file names without the extension), sorted.
func Names() []string {
	entries, _ := files.ReadDir(".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".sql"))
	}
	sort.Strings(names)
	return names
}

// Query returns the SQL text of a model, or an error naming the known models.
func Query(name string) (string, error) {
	b, err := files.ReadFile(name + ".sql")
	if err != nil {
		return "", fmt.Errorf("sql: no model %q (one of %s)", name, strings.Join(Names(), ", "))
	}
	return string(b), nil
}

// Header returns the leading comment block of a model (what it computes and which figure or table of the
// paper it reproduces), without the comment markers.
func Header(name string) string {
	text, err := Query(name)
	if err != nil {
		return ""
	}
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(line, "--")))
	}
	return strings.Join(lines, "\n")
}
