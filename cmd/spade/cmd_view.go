package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/view"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// viewOptions are the options of `spade view`.
type viewOptions struct {
	globalOptions
	// Addr is --addr, the host:port to listen on.
	Addr string
	// Token is --token, the secret every request must carry ("" for none, loopback only).
	Token string
}

func newViewCommand() *cli.Command {
	return &cli.Command{
		Name:  "view",
		Usage: "browse the lake in a web app: runs, timelines, pools, envs, plays side by side, a SQL console",
		Description: `Serves a single-user web app from the binary (no network beyond the address it listens on). Every
number comes from DuckDB SQL over the lake and links to that SQL in the read-only console. Every page
has its own URL (run, step, env, episode). The address is loopback unless --token is given; with a
token, open the app once as http://HOST:PORT/?token=SECRET (a cookie keeps it) or send
Authorization: Bearer SECRET.

Example: spade --lake s3://bucket/prefix view --addr 127.0.0.1:8600`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: view.DefaultAddr, Usage: "host:port to listen on"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"SPADE_VIEW_TOKEN"}, Usage: "a secret every request must carry (required for a non-loopback --addr)"},
		},
		Action: func(c *cli.Context) error {
			return runView(c.Context, viewOptions{globalOptions: globalsFrom(c), Addr: c.String("addr"), Token: c.String("token")})
		},
	}
}

// runView serves the web app on opts.Addr until ctx ends.
func runView(ctx context.Context, opts viewOptions) error {
	if err := view.CheckAddr(opts.Addr, opts.Token); err != nil {
		return usageError("%v", err)
	}
	lk, err := opts.openExistingLake(ctx)
	if err != nil {
		return err
	}
	srv := view.New(lk, view.Options{Token: opts.Token, Stages: stageMarkers(steprun.Stages())})
	defer srv.Close()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return asUsage(fmt.Errorf("--addr: %w", err))
	}
	fmt.Fprintf(opts.Out, "spade view: http://%s/ (lake %s; Ctrl-C stops)\n", ln.Addr(), lk.URI())
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shutdown)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return ctx.Err()
}

// stageMarkers lists the stages with their marker tables for the timeline; stages that share a marker
// (pool and gate both commit envs last) become one entry named after both, at the later one's place.
func stageMarkers(stages []stage.Stage) []view.StageMarker {
	var out []view.StageMarker
	for _, s := range stages {
		m := view.StageMarker{Name: string(s.Name()), Table: stage.Marker(s)}
		for i, prev := range out {
			if prev.Table == m.Table {
				m.Name = prev.Name + "/" + m.Name
				out = append(out[:i], out[i+1:]...)
				break
			}
		}
		out = append(out, m)
	}
	return out
}
