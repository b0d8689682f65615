package gate

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// docTable returns the first column of the first table under the heading in docs/sandbox.md, without
// its backquotes.
func docTable(t *testing.T, heading string) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/sandbox.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/sandbox.md has no heading %q", heading)
	}
	var names []string
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			if len(names) > 0 && !strings.HasPrefix(line, "|") {
				break // the end of the first table
			}
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		names = append(names, strings.Trim(cell, "`"))
	}
	return names
}

// TestCheckTablesAreDocumented: the check tables of docs/sandbox.md (strict under "Static checks and the
// gate", official under "The official gate") name every check of their check set, in every setting
// contract and official tools check set, in the order the gate runs them, and nothing else.
func TestCheckTablesAreDocumented(t *testing.T) {
	for _, c := range []struct {
		checks  config.GateChecks
		heading string
	}{
		{config.GateStrict, "## Static checks and the gate"},
		{config.GateOfficial, "## The official gate"},
	} {
		doc := docTable(t, c.heading)
		var all []string
		for _, setting := range []schemas.Setting{schemas.SettingGames, schemas.SettingTools} {
			for _, variant := range [][2]string{{string(schemas.ContractGymnasium), string(config.ToolsChecksSpade)}, {string(schemas.ContractLegacy), string(config.ToolsChecksSpade)},
				{string(schemas.ContractGymnasium), string(config.ToolsChecksAuthors)}, {string(schemas.ContractLegacy), string(config.ToolsChecksAuthors)}} {
				contract, tools := schemas.EnvContract(variant[0]), config.GateToolsChecks(variant[1])
				names := CheckNamesWith(setting, c.checks, contract, tools)
				var inDoc []string
				for _, n := range doc {
					if slices.Contains(names, n) {
						inDoc = append(inDoc, n)
					}
				}
				if !slices.Equal(inDoc, names) {
					t.Errorf("gate.checks %s, %s, %s, gate.tools_checks %s: the gate runs %v; docs/sandbox.md's table lists them as %v", c.checks, setting, contract, tools, names, inDoc)
				}
				for _, n := range names {
					if !slices.Contains(all, n) {
						all = append(all, n)
					}
				}
			}
		}
		for _, n := range doc {
			if !slices.Contains(all, n) {
				t.Errorf("gate.checks %s: docs/sandbox.md's table lists %q, which no setting runs", c.checks, n)
			}
		}
	}
}
