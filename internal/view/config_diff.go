package view

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/spadekit/spade/internal/config"
)

// configChange is one key whose value differs between the compared runs: Values holds each run's value,
// in the order the runs were asked for.
type configChange struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// configDiffView is the compare page's configuration table: the keys on which any run differs from the
// first.
type configDiffView struct {
	Runs    []string       `json:"runs"`
	Changes []configChange `json:"changes"`
}

// diffConfigs lists every key on which some config differs from the first, with every config's value
// (config.Diff's text), sorted by key.
func diffConfigs(cfgs []*config.Config) []configChange {
	values := map[string][]string{}
	for i := 1; i < len(cfgs); i++ {
		for _, ch := range config.Diff(cfgs[0], cfgs[i]) {
			if values[ch.Key] == nil {
				values[ch.Key] = slices.Repeat([]string{ch.A}, len(cfgs)) // equal to the first unless a diff says otherwise
			}
			values[ch.Key][i] = ch.B
		}
	}
	out := []configChange{}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		out = append(out, configChange{Key: key, Values: values[key]})
	}
	return out
}

// handleConfigDiff answers GET /api/config/diff?run=A&run=B[&run=...]: the keys on which the runs'
// configurations differ, each with every run's value.
func (s *Server) handleConfigDiff(w http.ResponseWriter, r *http.Request) {
	runs := r.URL.Query()["run"]
	if len(runs) < 2 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("config diff: name at least two runs (?run=A&run=B)"))
		return
	}
	cfgs := make([]*config.Config, len(runs))
	for i, run := range runs {
		cfg, err := s.lk.RunConfig(r.Context(), run)
		if err != nil {
			writeError(w, statusOf(err), fmt.Errorf("run %s: %w", run, err))
			return
		}
		cfgs[i] = cfg
	}
	writeJSON(w, configDiffView{Runs: runs, Changes: diffConfigs(cfgs)})
}
