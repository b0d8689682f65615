// Package tensorboard writes a run's per-step figures as TensorBoard event files, which `tensorboard
// --logdir DIR` shows and `wandb sync --sync-tensorboard DIR` uploads.
//
// An event file is a sequence of TFRecords (a little-endian uint64 length, the masked CRC-32C of those 8
// bytes, the data, the masked CRC-32C of the data) whose data are tensorflow.Event protobufs: the first
// holds file_version "brain.Event:2", each later one wall_time, step and a Summary of scalar values
// (tag, simple_value). The encoding is written here with protowire, no generated code.
package tensorboard

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// FileVersion is the first event of every file (TensorBoard reads a file only after it).
const FileVersion = "brain.Event:2"

// Field numbers of tensorflow.Event, Summary and Summary.Value (tensorflow/core/util/event.proto and
// tensorflow/core/framework/summary.proto).
const (
	eventWallTime    = 1
	eventStep        = 2
	eventFileVersion = 3
	eventSummary     = 5
	summaryValue     = 1
	valueTag         = 1
	valueSimple      = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC is TFRecord's checksum: CRC-32C, rotated right by 15 bits, plus 0xa282ead8.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// Scalar is one value of one tag at one step.
type Scalar struct {
	// Tag groups as TensorBoard shows it: "agent/solve_rate_unhinted", "train/designer/loss".
	Tag string
	// Step is the training step (a window's or pool's first step for figures of a window or pool).
	Step int64
	// Value is the figure (written as a float32, which is what simple_value holds).
	Value float64
	// Settled is the step after which the value no longer changes (a window's figure settles at its last
	// step): `spade run --tensorboard` writes a value once its step has settled.
	Settled int64
}

// Writer appends events to one event file.
type Writer struct {
	f    *os.File
	w    *bufio.Writer
	path string
}

// Create makes dir (and parents) and a new event file in it named as TensorBoard expects
// (events.out.tfevents.<unix seconds>.<host>.<suffix>), and writes the file_version event.
func Create(dir, suffix string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	now := time.Now()
	name := fmt.Sprintf("events.out.tfevents.%d.%s.%d.%s", now.Unix(), host, os.Getpid(), suffix)
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	w := &Writer{f: f, w: bufio.NewWriter(f), path: path}
	if err := w.record(versionEvent(now)); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

// Write appends one event per step with the step's scalars (in the given order; consecutive scalars of
// one step share an event), stamped with wall.
func (w *Writer) Write(scalars []Scalar, wall time.Time) error {
	for i := 0; i < len(scalars); {
		j := i + 1
		for j < len(scalars) && scalars[j].Step == scalars[i].Step {
			j++
		}
		if err := w.record(scalarEvent(wall, scalars[i].Step, scalars[i:j])); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// Flush writes buffered events to the file, so a reader sees every step written so far.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	return nil
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tensorboard: %w", cerr)
	}
	return err
}

// record writes one TFRecord.
func (w *Writer) record(data []byte) error {
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(head[8:], MaskedCRC(head[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], MaskedCRC(data))
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.w.Write(b); err != nil {
			return fmt.Errorf("tensorboard: %w", err)
		}
	}
	return nil
}

// timeNow is the wall clock events are stamped with.
var timeNow = time.Now

func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// versionEvent is the file's first Event: wall_time and file_version.
func versionEvent(t time.Time) []byte {
	var b []byte
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(wallTime(t)))
	b = protowire.AppendTag(b, eventFileVersion, protowire.BytesType)
	return protowire.AppendString(b, FileVersion)
}

// scalarEvent is an Event with wall_time, step and a Summary holding one Value per scalar.
func scalarEvent(t time.Time, step int64, scalars []Scalar) []byte {
	var summary []byte
	for _, s := range scalars {
		var v []byte
		v = protowire.AppendTag(v, valueTag, protowire.BytesType)
		v = protowire.AppendString(v, s.Tag)
		v = protowire.AppendTag(v, valueSimple, protowire.Fixed32Type)
		v = protowire.AppendFixed32(v, math.Float32bits(float32(s.Value)))
		summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
		summary = protowire.AppendBytes(summary, v)
	}
	var b []byte
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(wallTime(t)))
	b = protowire.AppendTag(b, eventStep, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(step))
	b = protowire.AppendTag(b, eventSummary, protowire.BytesType)
	return protowire.AppendBytes(b, summary)
}
