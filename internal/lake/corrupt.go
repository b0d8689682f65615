package lake

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// CorruptError is a committed file whose content does not match its commit record (the manifest's
// size and sha256): nothing of it is read. Every reader meets it before a row is decoded or a DuckDB
// view is made over the file.
type CorruptError struct {
	// Partition is the file's partition (its run, table and step); Key is the file's object key.
	Partition PartitionKey
	Key       string
	// Detail says what differs.
	Detail string
	// Repair is the command that repairs it (the lake's RepairHint), empty when none was set.
	Repair string
}

// Error names the file, its table and step, what differs and the repair.
func (e *CorruptError) Error() string {
	repair := e.Repair
	if repair == "" {
		repair = "spade lake verify lists the command that repairs it"
	}
	return fmt.Sprintf("lake: file %s (table %s, step %d) is corrupt: %s; repair: %s", e.Key, e.Partition.Table, e.Partition.Step, e.Detail, repair)
}

// SetRepairHint sets the function that names the command repairing a corrupt file's partition
// (CorruptError.Repair); the CLI sets it, since it knows the stages.
func (l *Lake) SetRepairHint(hint func(PartitionKey) string) { l.repairHint = hint }

// corrupt builds the CorruptError of a file of part.
func (l *Lake) corrupt(part PartitionKey, key, detail string) error {
	e := &CorruptError{Partition: part, Key: key, Detail: detail}
	if l.repairHint != nil {
		e.Repair = l.repairHint(part)
	}
	return e
}

// checkBody compares a file's content with its commit record.
func (l *Lake) checkBody(part PartitionKey, key string, body []byte, f FileEntry) error {
	if detail := bodyMismatch(body, f); detail != "" {
		return l.corrupt(part, key, detail)
	}
	return nil
}

// bodyMismatch says how a file's content differs from its record (size, then sha256), "" when it does not.
func bodyMismatch(body []byte, f FileEntry) string {
	if detail := sizeMismatch(int64(len(body)), f); detail != "" {
		return detail
	}
	sum := sha256.Sum256(body)
	return sumMismatch(hex.EncodeToString(sum[:]), f)
}

// sizeMismatch and sumMismatch say how a file's size or hex sha256 differs from its record ("" when it
// does not; a record without a size checks none).
func sizeMismatch(size int64, f FileEntry) string {
	if f.Bytes > 0 && size != f.Bytes {
		return fmt.Sprintf("%d bytes, the record says %d", size, f.Bytes)
	}
	return ""
}

func sumMismatch(sum string, f FileEntry) string {
	if sum != f.SHA256 {
		return fmt.Sprintf("sha256 %.12s, the record says %.12s", sum, f.SHA256)
	}
	return ""
}

// fileIdentity is what says a local file is the one hashed before: its path, device and inode, size,
// modification time and inode change time. A file rewritten in place (the same size, one byte flipped)
// has a new change time, which no program can set back, so it is hashed again.
type fileIdentity struct {
	path             string
	dev, ino         uint64
	size, mtim, ctim int64
	sha256           string
}

// verifiedFiles holds the identities of local files whose content matched their record, for the life of
// the process: a file is hashed once per process, however many sessions read it.
var verifiedFiles sync.Map

// checkLocalFile compares a local file (a local lake's part file in place, or the cache's copy of a
// remote one) with its commit record, hashing it unless this process already hashed that very file.
func (l *Lake) checkLocalFile(part PartitionKey, key, path string, f FileEntry) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	id := fileIdentity{path: path, size: st.Size(), mtim: st.ModTime().UnixNano(), sha256: f.SHA256}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino, id.ctim = uint64(sys.Dev), sys.Ino, sys.Ctim.Nano()
	}
	if _, ok := verifiedFiles.Load(id); ok {
		return nil
	}
	if detail := sizeMismatch(st.Size(), f); detail != "" {
		return l.corrupt(part, key, detail)
	}
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return err
	}
	if detail := sumMismatch(hex.EncodeToString(h.Sum(nil)), f); detail != "" {
		return l.corrupt(part, key, detail)
	}
	verifiedFiles.Store(id, true)
	return nil
}

// ForgetVerifiedFiles makes this process hash every local file again on its next read, as a fresh
// process would (for benchmarks of a first read).
func ForgetVerifiedFiles() { verifiedFiles.Clear() }
