package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// channel is Go's end of a socket to one sandboxed child: JSON lines (stream) or one JSON
// message per packet (seqpacket). Whatever arrives is untrusted: a reply must be one bounded
// line whose seq matches the request, with nothing after it.
type channel struct {
	conn   *net.UnixConn
	reader *bufio.Reader
	packet bool
	seq    int64
	// creds, when set (an env instance's socket, with SO_PASSCRED), knows which process sent
	// what we read: the kernel attaches the sender's pid to every message, so no process can
	// pose as another.
	creds *credReader
}

// credReader reads a SO_PASSCRED socket and records the pid (in our PID namespace) of every
// sender; file descriptors passed to us are closed.
type credReader struct {
	conn *net.UnixConn
	oob  []byte
	// first is the pid that sent the first bytes; foreign is set once another pid sends.
	first, last int32
	foreign     bool
}

// Read implements io.Reader.
func (r *credReader) Read(p []byte) (int, error) {
	n, oobn, _, _, err := r.conn.ReadMsgUnix(p, r.oob)
	n, oobn = max(n, 0), max(oobn, 0)
	if oobn > 0 {
		msgs, _ := unix.ParseSocketControlMessage(r.oob[:oobn])
		for i := range msgs {
			if fds, ferr := unix.ParseUnixRights(&msgs[i]); ferr == nil {
				for _, fd := range fds {
					unix.Close(fd)
				}
			}
			if c, cerr := unix.ParseUnixCredentials(&msgs[i]); cerr == nil && c.Pid > 0 {
				r.last = c.Pid
				if r.first == 0 {
					r.first = c.Pid
				} else if c.Pid != r.first {
					r.foreign = true
				}
			}
		}
	}
	return n, err
}

// newCredChannel is newChannel for a stream socket on which SO_PASSCRED is set.
func newCredChannel(f *os.File) (*channel, error) {
	c, err := newChannel(f, false)
	if err != nil {
		return nil, err
	}
	c.creds = &credReader{conn: c.conn, oob: make([]byte, 4096)}
	c.reader = bufio.NewReaderSize(c.creds, 64<<10)
	return c, nil
}

// sendCode sends a program's source to a spawned child on its own socket (a SOCK_SEQPACKET
// one): its length, then packets of at most 32 KiB.
func (c *channel) sendCode(code string, timeout time.Duration) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(timeout))
	defer c.conn.SetWriteDeadline(time.Time{})
	if _, err := c.conn.Write([]byte(strconv.Itoa(len(code)))); err != nil {
		return err
	}
	for rest := []byte(code); len(rest) > 0; {
		n := min(len(rest), 32<<10)
		if _, err := c.conn.Write(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

func newChannel(f *os.File, packet bool) (*channel, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("sandbox: not a unix socket")
	}
	return &channel{conn: uc, reader: bufio.NewReaderSize(uc, 64<<10), packet: packet}, nil
}

// Close closes our end; the child sees EOF.
func (c *channel) Close() error { return c.conn.Close() }

// sendFD sends payload with one file descriptor attached.
func (c *channel) sendFD(payload []byte, f *os.File) error {
	_, _, err := c.conn.WriteMsgUnix(payload, unixRights(f), nil)
	return err
}

// roundTrip sends req (nil: send nothing, read the child's unsolicited hello, seq 0) and reads
// the reply within timeout. A reply with ok=false comes back as *Error of the child's kind.
func (c *channel) roundTrip(req map[string]any, timeout time.Duration, o Options) (reply, error) {
	deadline := time.Now().Add(timeout)
	if req != nil {
		c.seq++
		req["seq"] = c.seq
		data, err := json.Marshal(req)
		if err != nil {
			return reply{}, err
		}
		_ = c.conn.SetWriteDeadline(deadline)
		if _, err := c.conn.Write(append(data, '\n')); err != nil {
			return reply{}, err
		}
	}
	_ = c.conn.SetReadDeadline(deadline)
	limit := 8*o.ObservationCap + (1 << 20)
	var line []byte
	var err error
	if c.packet {
		buf := make([]byte, limit)
		n, rerr := c.conn.Read(buf)
		line, err = buf[:n], rerr
	} else {
		line, err = readLine(c.reader, limit)
	}
	if err != nil {
		return reply{}, err
	}
	if c.reader.Buffered() > 0 {
		return reply{}, &Error{Kind: KindProtocol, Msg: "env sent more than one reply"}
	}
	if c.creds != nil && c.creds.foreign {
		return reply{}, &Error{Kind: KindProtocol, Msg: fmt.Sprintf("a process other than the env (pid %d) wrote to its socket", c.creds.last)}
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return reply{}, &Error{Kind: KindProtocol, Msg: "env sent a malformed reply"}
	}
	if err := checkUniqueKeys(line); err != nil {
		return reply{}, err
	}
	if r.Seq != c.seq {
		return r, &Error{Kind: KindProtocol, Msg: fmt.Sprintf("env replied to request %d, want %d", r.Seq, c.seq)}
	}
	if !r.OK {
		kind := r.Kind
		switch kind {
		case KindEnv, KindMemory, KindOutput, KindTimeout:
		default:
			return r, &Error{Kind: KindProtocol, Msg: fmt.Sprintf("env sent an error of unknown kind %q", kind)}
		}
		return r, &Error{Kind: kind, Msg: r.Error, Trace: r.Trace}
	}
	return r, nil
}
