package tensorboard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

// ReadFile reads an event file's scalars (simple_value summaries) in file order, checking the framing and
// both CRCs of every record and that the first event is the file_version one.
func ReadFile(path string) ([]Scalar, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	var out []Scalar
	for i := 0; len(b) > 0; i++ {
		if len(b) < 12 || binary.LittleEndian.Uint32(b[8:12]) != MaskedCRC(b[:8]) {
			return nil, fmt.Errorf("tensorboard: %s: record %d: bad length or its CRC", path, i)
		}
		n := binary.LittleEndian.Uint64(b[:8])
		if uint64(len(b)-12) < n+4 || binary.LittleEndian.Uint32(b[12+n:16+n]) != MaskedCRC(b[12:12+n]) {
			return nil, fmt.Errorf("tensorboard: %s: record %d: truncated or bad data CRC", path, i)
		}
		version, step, values, err := parseEvent(b[12 : 12+n])
		if err != nil {
			return nil, fmt.Errorf("tensorboard: %s: record %d: %w", path, i, err)
		}
		if i == 0 && version != FileVersion {
			return nil, fmt.Errorf("tensorboard: %s: first event is not file_version %s", path, FileVersion)
		}
		for _, v := range values {
			v.Step, v.Settled = step, step
			out = append(out, v)
		}
		b = b[16+n:]
	}
	return out, nil
}

// parseEvent decodes the fields of an Event this package writes.
func parseEvent(b []byte) (version string, step int64, values []Scalar, err error) {
	bad := errors.New("malformed Event")
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", 0, nil, bad
		}
		b = b[n:]
		switch {
		case num == eventStep && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			step, n = int64(v), m
		case num == eventFileVersion && typ == protowire.BytesType:
			v, m := protowire.ConsumeString(b)
			version, n = v, m
		case num == eventSummary && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m >= 0 {
				if values, err = parseSummary(v); err != nil {
					return "", 0, nil, err
				}
			}
			n = m
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return "", 0, nil, bad
		}
		b = b[n:]
	}
	return version, step, values, nil
}

func parseSummary(b []byte) ([]Scalar, error) {
	var out []Scalar
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errors.New("malformed Summary")
		}
		b = b[n:]
		if num != summaryValue || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, errors.New("malformed Summary")
			}
			b = b[n:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return nil, errors.New("malformed Summary.Value")
		}
		b = b[m:]
		var s Scalar
		for len(v) > 0 {
			num, typ, k := protowire.ConsumeTag(v)
			if k < 0 {
				return nil, errors.New("malformed Summary.Value")
			}
			v = v[k:]
			switch {
			case num == valueTag && typ == protowire.BytesType:
				s.Tag, k = protowire.ConsumeString(v)
			case num == valueSimple && typ == protowire.Fixed32Type:
				var x uint32
				x, k = protowire.ConsumeFixed32(v)
				s.Value = float64(math.Float32frombits(x))
			default:
				k = protowire.ConsumeFieldValue(num, typ, v)
			}
			if k < 0 {
				return nil, errors.New("malformed Summary.Value")
			}
			v = v[k:]
		}
		out = append(out, s)
	}
	return out, nil
}
