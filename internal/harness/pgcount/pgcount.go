// Package pgcount is a loopback proxy in front of Postgres that counts what
// the client sends, read from the wire protocol: round trips (a simple
// Query, or a Sync closing an extended-protocol exchange: each waits for
// the server's ReadyForQuery) and the transactions committed (a COMMIT
// statement, sent either way). It tells where one execution's time goes
// without any hook in the code under test.
package pgcount

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Counts are totals since the proxy started.
type Counts struct {
	RoundTrips int64 // Query + Sync messages
	Statements int64 // statements run: Query and Execute messages
	Commits    int64 // COMMIT statements
}

// Sub is c minus an earlier reading.
func (c Counts) Sub(o Counts) Counts {
	return Counts{c.RoundTrips - o.RoundTrips, c.Statements - o.Statements, c.Commits - o.Commits}
}

// Proxy counts the messages of every connection made through it.
type Proxy struct {
	l                        net.Listener
	upstream                 string
	trips, statements, comms atomic.Int64
	wg                       sync.WaitGroup
	mu                       sync.Mutex
	byText                   map[string]int64 // statements run, by query text
}

// Start listens on a free loopback port and forwards to upstream.
func Start(upstream string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the counting proxy: %w", err)
	}
	p := &Proxy{l: l, upstream: upstream, byText: map[string]int64{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the host:port to dial instead of upstream.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Counts reads the totals.
func (p *Proxy) Counts() Counts {
	return Counts{p.trips.Load(), p.statements.Load(), p.comms.Load()}
}

// ByText is how many times each query text ran since the proxy started.
func (p *Proxy) ByText() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.byText))
	for k, v := range p.byText {
		out[k] = v
	}
	return out
}

// Close stops accepting; open connections end with their clients.
func (p *Proxy) Close() error {
	err := p.l.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		io.Copy(client, server)
		client.Close()
	}()
	r := bufio.NewReader(client)
	st := &session{prepared: map[string]string{}}
	if err := forwardStartup(r, server); err != nil {
		return
	}
	for {
		typ, body, err := readMessage(r)
		if err != nil {
			return
		}
		p.count(st, typ, body)
		if _, err := server.Write(frame(typ, body)); err != nil {
			return
		}
	}
}

// forwardStartup passes the untyped first message (StartupMessage).
func forwardStartup(r *bufio.Reader, w io.Writer) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size < 4 || size > 1<<20 {
		return errors.New("bad startup message")
	}
	rest := make([]byte, size-4)
	if _, err := io.ReadFull(r, rest); err != nil {
		return err
	}
	_, err := w.Write(append(n[:], rest...))
	return err
}

func readMessage(r *bufio.Reader) (byte, []byte, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return 0, nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size < 4 {
		return 0, nil, errors.New("bad message length")
	}
	body := make([]byte, size-4)
	_, err = io.ReadFull(r, body)
	return typ, body, err
}

func frame(typ byte, body []byte) []byte {
	out := make([]byte, 5+len(body))
	out[0] = typ
	binary.BigEndian.PutUint32(out[1:5], uint32(len(body)+4))
	copy(out[5:], body)
	return out
}

var commit = []byte("commit")

// session is one connection's extended-protocol state: the text of each
// prepared statement and of the one bound last, so that an Execute of a
// statement prepared long before is still told by its text.
type session struct {
	prepared map[string]string
	bound    string
}

func (p *Proxy) count(st *session, typ byte, body []byte) {
	switch typ {
	case 'Q': // simple query: its own round trip
		p.trips.Add(1)
		p.ran(string(cstring(body)))
	case 'P': // Parse: statement name, then the query text
		name := cstring(body)
		st.prepared[string(name)] = string(cstring(body[len(name)+1:]))
	case 'B': // Bind: portal name, then statement name
		portal := cstring(body)
		st.bound = st.prepared[string(cstring(body[len(portal)+1:]))]
	case 'E': // Execute: the bound statement runs
		p.ran(st.bound)
	case 'S': // Sync: the client waits for ReadyForQuery
		p.trips.Add(1)
	}
}

func (p *Proxy) ran(query string) {
	p.statements.Add(1)
	if isCommit([]byte(query)) {
		p.comms.Add(1)
	}
	p.mu.Lock()
	p.byText[query]++
	p.mu.Unlock()
}

// cstring is b up to its first NUL.
func cstring(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

func isCommit(query []byte) bool {
	q := bytes.TrimSpace(bytes.TrimRight(query, "\x00"))
	return len(q) >= len(commit) && bytes.EqualFold(q[:len(commit)], commit)
}
