package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/sandbox"
)

func init() {
	register(&cli.Command{
		Name:  "doctor",
		Usage: "report the Python interpreter and the sandbox isolation this host provides",
		Description: "Resolves the interpreter ($SPADE_PYTHON, else python3 on PATH, through version-manager shims),\n" +
			"probes each isolation layer by starting a real sandbox worker (bwrap, then the namespace init), says\n" +
			"which one is in force, and checks that numpy and sympy import inside the sandbox. Exits 1 when no\n" +
			"isolation layer works (generated code would then be refused without --unsafe-no-isolation).\n\n" +
			"Example: spade doctor\n" +
			"         SPADE_PYTHON=/usr/bin/python3 spade doctor",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "python", EnvVars: []string{sandbox.PythonEnv}, Usage: "Python interpreter for the sandbox (default python3 on PATH)"},
		},
		Action: func(c *cli.Context) error {
			out := c.App.Writer
			probes, py, err := sandbox.ProbeIsolation(c.Context, c.String("python"))
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "python:    %s -> %s (Python %s)\n", py.Requested, py.Executable, py.Version)
			fmt.Fprintln(out, "isolation:")
			var inForce *sandbox.Probe
			for i, p := range probes {
				verdict := "no"
				if p.OK {
					verdict = "ok"
					if inForce == nil {
						inForce = &probes[i]
					}
				}
				fmt.Fprintf(out, "  %-11s %-3s %6.1f ms  %s\n", p.Isolation, verdict, float64(p.Took.Microseconds())/1000, p.Detail)
			}
			if inForce == nil {
				fmt.Fprintln(out, "in force:  NONE: generated code is refused unless --unsafe-no-isolation is passed")
				return errors.New("doctor: no isolation layer works here: install bubblewrap (apt-get install -y bubblewrap) or allow unprivileged user namespaces")
			}
			fmt.Fprintf(out, "in force:  %s (the first that works, in the order above)\n", inForce.Isolation)
			fmt.Fprintf(out, "preloaded: %s\n", strings.Join(inForce.Modules, " "))
			pool, err := sandbox.NewPool(c.Context, sandbox.Options{PythonExe: py, Isolation: inForce.Isolation, Workers: 1})
			if err != nil {
				return err
			}
			defer pool.Close()
			var optional []string
			for _, module := range []string{"numpy", "sympy"} {
				prog, err := pool.Load(c.Context, "import "+module+"\nclass Probe:\n    def reset(self, seed):\n        return ''\n    def step(self, action):\n        return '', 0.0, True, {}\n")
				if err != nil {
					optional = append(optional, module+" missing")
					continue
				}
				prog.Close()
				optional = append(optional, module+" ok")
			}
			fmt.Fprintf(out, "optional:  %s (importable by environment programs)\n", strings.Join(optional, ", "))
			return nil
		},
	})
}
