package config

// Metrics configures the audits (the models of sql/, `spade metrics`, the viewer) and the memory labels.
type Metrics struct {
	// BandLo is the low end of the learnable band of solve rates. An env whose no-hint solve rate is in
	// [band_lo, band_hi] is learnable (the learnable_band audit, Figure 6); below it, with and without the
	// hint, the regret stage labels the env too_hard for the memory.
	BandLo float64 `json:"band_lo" range:"[0,1]"`
	// BandHi is the high end of the learnable band, at least metrics.band_lo. Above it an env is labelled
	// too_easy.
	BandHi float64 `json:"band_hi" range:"[0,1]"`
	// Window is the number of steps the audits aggregate over, as learnable_band per window.
	Window int `json:"window" range:">=1"`
}

// validate checks that the learnable band is not empty.
func (m Metrics) validate(*Config) error {
	if m.BandLo > m.BandHi {
		return invalidf("config: key \"metrics.band_lo\" (%v) must be at most metrics.band_hi (%v)", m.BandLo, m.BandHi)
	}
	return nil
}

// presetMetrics is the paper's learnable band [0.2, 0.8] over 16-step windows.
func presetMetrics(presetSpec) Metrics {
	return Metrics{BandLo: 0.2, BandHi: 0.8, Window: 16}
}
