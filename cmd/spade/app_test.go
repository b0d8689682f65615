package main

import (
	"sort"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestAppListsCommandsByName: newApp lists its top-level commands by name (the order help shows them
// in), each once, and two apps share no command or flag, so building one leaves nothing behind for the
// next.
func TestAppListsCommandsByName(t *testing.T) {
	a, b := newApp(), newApp()
	var names []string
	for _, c := range a.Commands {
		names = append(names, c.Name)
	}
	if !sort.StringsAreSorted(names) {
		t.Fatalf("top-level commands not in name order: %v", names)
	}
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			t.Fatalf("command %s listed twice", names[i])
		}
	}
	if len(a.Commands) != len(b.Commands) {
		t.Fatalf("two apps: %d and %d commands", len(a.Commands), len(b.Commands))
	}
	var walk func(x, y []*cli.Command)
	walk = func(x, y []*cli.Command) {
		for i := range x {
			if x[i] == y[i] {
				t.Fatalf("command %s is shared between two apps", x[i].Name)
			}
			for j := range x[i].Flags {
				if x[i].Flags[j] == y[i].Flags[j] {
					t.Fatalf("flag --%s of %s is shared between two apps", x[i].Flags[j].Names()[0], x[i].Name)
				}
			}
			walk(x[i].Subcommands, y[i].Subcommands)
		}
	}
	walk(a.Commands, b.Commands)
}
