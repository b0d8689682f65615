package tmplfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{"prompts/a.tmpl": {Data: []byte("hello {{.Name}}")}, "prompts/bad.tmpl": {Data: []byte("{{.Name")}}
	tmpl, name, readErr, parseErr := Load(fsys, "prompts/a.tmpl", "")
	if readErr != nil || parseErr != nil || name != "a.tmpl" {
		t.Fatalf("embedded: %v %v %q", readErr, parseErr, name)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, map[string]string{"Name": "x"}); err != nil || b.String() != "hello x" {
		t.Fatalf("execute: %q %v", b.String(), err)
	}
	if err := tmpl.Execute(&b, map[string]string{}); err == nil {
		t.Fatal("a missing key rendered without an error")
	}
	if _, _, _, parseErr := Load(fsys, "prompts/bad.tmpl", ""); parseErr == nil {
		t.Fatal("a broken template parsed")
	}
	if _, _, readErr, _ := Load(fsys, "prompts/none.tmpl", ""); readErr == nil {
		t.Fatal("a missing embedded file was read")
	}
	file := filepath.Join(t.TempDir(), "mine.tmpl")
	os.WriteFile(file, []byte("mine {{.Name}}"), 0o644)
	if _, name, readErr, parseErr := Load(fsys, "prompts/a.tmpl", file); readErr != nil || parseErr != nil || name != file {
		t.Fatalf("override: %v %v %q", readErr, parseErr, name)
	}
	if _, _, readErr, _ := Load(fsys, "prompts/a.tmpl", file+".none"); readErr == nil {
		t.Fatal("a missing override file was read")
	}
}
