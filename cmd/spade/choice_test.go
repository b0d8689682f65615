package main

import (
	"errors"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
)

// TestCheckChoice: a value among the allowed ones passes; any other is a usage error (exit 2) whose
// message lists the allowed values in order, joined as prose, and quotes the value given.
func TestCheckChoice(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{checkChoice("--format", "xml", "table", "csv", "json"), `--format must be table, csv or json, got "xml"`},
		{checkChoice("--format", "", "yaml", "json"), `--format must be yaml or json, got ""`},
		{checkChoice("--isolation", sandbox.Isolation("landlock"), sandbox.IsolationAuto, sandbox.IsolationBwrap, sandbox.IsolationNamespaces),
			`--isolation must be auto, bwrap or namespaces, got "landlock"`},
		{checkChoice("--checks", config.GateChecks("lax"), config.GateChecksValues()...), `--checks must be official or strict, got "lax"`},
		{checkChoice("--size", "huge", "paper"), `--size must be paper, got "huge"`},
	} {
		var u usageErr
		if !errors.As(tc.err, &u) || tc.err.Error() != tc.want {
			t.Errorf("checkChoice = %v, want the usage error %q", tc.err, tc.want)
		}
	}
	if err := checkChoice("--format", "csv", "table", "csv", "json"); err != nil {
		t.Errorf("checkChoice(csv) = %v, want nil", err)
	}
}
