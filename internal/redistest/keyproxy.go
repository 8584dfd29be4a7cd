package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// A KeyProxy forwards loopback connections to one Redis server command by
// command, reading RESP both ways, as a proxy that routes each command by
// its first key does (Envoy's Redis proxy, twemproxy, managed services'
// proxies), and refuses what such a proxy cannot route: a script call
// (EVAL, EVALSHA and their _RO forms) that declares no key. It answers
// that call with an error reply of its own (SetRefusal) and never sends
// it to the server, as DragonflyDB refuses a script's undeclared keys.
// Replies keep the order of their commands, pipelines included.
type KeyProxy struct {
	*relay
	refusal atomic.Pointer[string]
	scripts atomic.Int64 // script calls seen
	refused atomic.Int64 // script calls refused
}

// DefaultRefusal is a KeyProxy's answer to a script call that declares no
// key, until SetRefusal: the reply of a proxy that needs a key to route
// a script by.
const DefaultRefusal = "ERR wrong number of arguments for 'evalsha' command"

// StartKeyProxy listens on a free loopback port and forwards to target.
// It stops, closing every connection, when the test ends.
func StartKeyProxy(t testing.TB, target string) *KeyProxy {
	t.Helper()
	p := &KeyProxy{}
	p.SetRefusal(DefaultRefusal)
	p.relay = startRelay(t, target, func(c, s net.Conn) (func(), func()) {
		// Each command's place in the replies: nil for the server's
		// next reply, else the proxy's own.
		order := make(chan []byte, 1024)
		return func() { p.commands(c, s, order) }, func() { p.replies(c, s, order) }
	})
	return p
}

// SetRefusal sets the text of the error reply to a script call that
// declares no key ("ERR ..."; without the leading '-').
func (p *KeyProxy) SetRefusal(text string) { p.refusal.Store(&text) }

// Scripts returns how many script calls the proxy has seen, and Refused
// how many of them it refused.
func (p *KeyProxy) Scripts() int64 { return p.scripts.Load() }

// Refused returns how many script calls the proxy refused.
func (p *KeyProxy) Refused() int64 { return p.refused.Load() }

// commands reads the client's commands from c: each one it refuses puts
// its error reply in order, every other one goes to s, and order waits
// for the server's reply.
func (p *KeyProxy) commands(c, s net.Conn, order chan<- []byte) {
	defer close(order)
	defer s.Close()
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(s, 64<<10)
	for {
		raw, args, err := readCommand(r)
		if err != nil {
			return
		}
		if p.refuses(args) {
			order <- []byte("-" + *p.refusal.Load() + "\r\n")
			continue
		}
		if _, err := w.Write(raw); err != nil {
			return
		}
		order <- nil
		if r.Buffered() == 0 { // the end of what the client has sent
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// refuses reports whether the proxy refuses a command: a script call
// that declares no key.
func (p *KeyProxy) refuses(args [][]byte) bool {
	if len(args) < 3 {
		return false
	}
	switch strings.ToLower(string(args[0])) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
	default:
		return false
	}
	p.scripts.Add(1)
	if string(args[2]) != "0" {
		return false
	}
	p.refused.Add(1)
	return true
}

// replies writes to c, in the order of the commands, the proxy's own
// replies and the server's, read from s.
func (p *KeyProxy) replies(c, s net.Conn, order <-chan []byte) {
	defer c.Close()
	defer s.Close()
	r := bufio.NewReaderSize(s, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	for reply := range order {
		if reply != nil {
			if _, err := w.Write(reply); err != nil {
				return
			}
		} else if err := copyReply(w, r); err != nil {
			return
		}
		if len(order) == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// readCommand reads one command, a RESP array of bulk strings as clients
// send them, and returns its bytes and its arguments.
func readCommand(r *bufio.Reader) (raw []byte, args [][]byte, err error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, nil, err
	}
	n, err := respLength(line, '*')
	if err != nil {
		return nil, nil, err
	}
	raw = line
	for range n {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, nil, err
		}
		size, err := respLength(line, '$')
		if err != nil || size < 0 {
			return nil, nil, fmt.Errorf("redistest: bad argument %q", line)
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(r, arg); err != nil {
			return nil, nil, err
		}
		raw = append(append(raw, line...), arg...)
		args = append(args, arg[:size])
	}
	return raw, args, nil
}

// copyReply copies one whole RESP2 or RESP3 reply from r to w. A push
// (RESP3 '>') is not a reply to a command: it is copied, and the reply
// after it too.
func copyReply(w *bufio.Writer, r *bufio.Reader) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("redistest: bad reply %q", line)
	}
	if _, err := w.Write(line); err != nil {
		return err
	}
	kind := line[0]
	switch kind {
	case '+', '-', ':', '_', '#', ',', '(': // a line alone
		return nil
	}
	n, err := respLength(line, kind)
	if err != nil || n < 0 { // a null
		return err
	}
	switch kind {
	case '$', '!', '=': // a blob
		_, err := io.CopyN(w, r, int64(n)+2)
		return err
	case '%', '|': // a map, an attribute: pairs
		n *= 2
	case '*', '~', '>':
	default:
		return fmt.Errorf("redistest: bad reply %q", line)
	}
	for range n {
		if err := copyReply(w, r); err != nil {
			return err
		}
	}
	if kind == '>' || kind == '|' { // the reply itself follows
		return copyReply(w, r)
	}
	return nil
}

// respLength reads the length of a RESP line of the given kind: "*3\r\n".
func respLength(line []byte, kind byte) (int, error) {
	if len(line) < 4 || line[0] != kind || line[len(line)-2] != '\r' {
		return 0, errors.New("redistest: bad RESP line " + strconv.Quote(string(line)))
	}
	return strconv.Atoi(string(line[1 : len(line)-2]))
}
