package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// channel is Go's end of a socket to one sandboxed child: JSON lines (stream) or one JSON
// message per packet (seqpacket). Whatever arrives is untrusted: a reply must be one bounded
// line whose seq matches the request, with nothing after it.
type channel struct {
	conn   *net.UnixConn
	reader *bufio.Reader
	packet bool
	seq    int64
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
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return reply{}, &Error{Kind: KindProtocol, Msg: "env sent a malformed reply"}
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
