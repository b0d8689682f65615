package progress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// TermHandler is the slog handler for a person at a terminal: "warning: msg key=value ...", one line per
// record, except that a value with line breaks (a Python traceback, a trainer's stderr) is printed below
// it as it is, indented, instead of being escaped into the line. Records below the level are dropped.
type TermHandler struct {
	w     io.Writer
	level slog.Leveler
	mu    *sync.Mutex
	attrs []slog.Attr
	group string
}

// NewTermHandler returns a TermHandler writing to w (Reporter.Writer keeps it apart from a bar).
func NewTermHandler(w io.Writer, level slog.Leveler) *TermHandler {
	return &TermHandler{w: w, level: level, mu: &sync.Mutex{}}
}

// Enabled implements slog.Handler.
func (h *TermHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle implements slog.Handler.
func (h *TermHandler) Handle(_ context.Context, r slog.Record) error {
	var line, blocks bytes.Buffer
	switch {
	case r.Level >= slog.LevelError:
		line.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		line.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		line.WriteString("debug: ")
	}
	line.WriteString(r.Message)
	add := func(a slog.Attr) {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return
		}
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		v := a.Value.String()
		if strings.Contains(v, "\n") {
			fmt.Fprintf(&blocks, "  %s:\n", key)
			for _, l := range strings.Split(strings.TrimRight(v, "\n"), "\n") {
				fmt.Fprintf(&blocks, "    %s\n", l)
			}
			return
		}
		if v == "" || strings.ContainsAny(v, " \t\"=") {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&line, " %s=%s", key, v)
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(a); return true })
	line.WriteByte('\n')
	line.Write(blocks.Bytes())
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(line.Bytes())
	return err
}

// WithAttrs implements slog.Handler.
func (h *TermHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), attrs...)
	return &c
}

// WithGroup implements slog.Handler.
func (h *TermHandler) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}
