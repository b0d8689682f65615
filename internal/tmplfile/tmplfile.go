// Package tmplfile loads a prompt template: an embedded file, or a file a run's setting points at
// instead (llm.prompt_file, rollout.prompt_file, generate.hint_prompt_file). Templates are parsed with
// missingkey=error, so a field the data lacks fails when the template runs, not silently.
package tmplfile

import (
	"io/fs"
	"os"
	"path"
	"text/template"
)

// Load reads the template at overridePath when it is not empty, else embedded from fsys, and parses it.
// name is the template's name (overridePath, or the embedded file's base name). readErr is set when the file cannot be read,
// parseErr when it does not parse; callers wrap each with what the template is for.
func Load(fsys fs.FS, embedded, overridePath string) (tmpl *template.Template, name string, readErr, parseErr error) {
	name = path.Base(embedded)
	var text []byte
	if overridePath != "" {
		name = overridePath
		text, readErr = os.ReadFile(overridePath)
	} else {
		text, readErr = fs.ReadFile(fsys, embedded)
	}
	if readErr != nil {
		return nil, name, readErr, nil
	}
	tmpl, parseErr = template.New(name).Option("missingkey=error").Parse(string(text))
	return tmpl, name, nil, parseErr
}
