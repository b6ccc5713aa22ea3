package contents

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// GetObject's bodies over connections of our own. net/http's transport
// hides its connections behind a buffered reader, so a GET in S3 mode
// had to copy every byte twice through the handler: read from the S3
// connection into a buffer, write from it to the client. When the
// endpoint is plain HTTP (an S3 server on the same host or network:
// versitygw, MinIO, SeaweedFS, Ceph RGW), the object's body is read
// here straight off a *net.TCPConn, which lets the handler hand the
// bytes to the client's socket with splice(2) and never see them
// (rawBody.SendTo). HTTPS endpoints, proxies and any request but a GET
// go through the SDK's usual client.

const (
	// rawIdlePerHost bounds the idle connections kept per S3 endpoint
	// (the SDK client's MaxIdleConnsPerHost).
	rawIdlePerHost = 128
	// rawIdleFor is how long an idle connection is kept: less than the
	// idle timeouts of common S3 servers, so a kept one is rarely stale.
	rawIdleFor = 30 * time.Second
)

// rawGetClient is the HTTP client of the SDK client that runs GetObject.
type rawGetClient struct {
	fallback s3.HTTPClient
	dialer   net.Dialer
	mu       sync.Mutex
	idle     map[string][]*rawConn
}

type rawConn struct {
	conn  *net.TCPConn
	br    *bufio.Reader
	since time.Time // idle since
}

func newRawGetClient(fallback s3.HTTPClient) *rawGetClient {
	return &rawGetClient{fallback: fallback, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		idle: map[string][]*rawConn{}}
}

// Do implements s3.HTTPClient.
func (c *rawGetClient) Do(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Scheme != "http" {
		return c.fallback.Do(req)
	}
	if p, err := http.ProxyFromEnvironment(req); err != nil || p != nil {
		return c.fallback.Do(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	// GET carries no body; a non-nil empty one would be sent chunked.
	r := req.Clone(req.Context())
	r.Body, r.ContentLength, r.GetBody = nil, 0, nil
	for {
		rc, reused, err := c.conn(req.Context(), addr)
		if err != nil {
			return nil, err
		}
		resp, err := c.roundTrip(r, rc, addr)
		if err != nil && reused && req.Context().Err() == nil {
			// The server closed a kept connection: GET is idempotent,
			// try again, at worst on a fresh one (as net/http does).
			continue
		}
		return resp, err
	}
}

// conn returns a kept connection to addr, or dials one.
func (c *rawGetClient) conn(ctx context.Context, addr string) (*rawConn, bool, error) {
	c.mu.Lock()
	for l := c.idle[addr]; len(l) > 0; l = c.idle[addr] {
		rc := l[len(l)-1]
		c.idle[addr] = l[:len(l)-1]
		if time.Since(rc.since) < rawIdleFor {
			c.mu.Unlock()
			return rc, true, nil
		}
		rc.conn.Close()
	}
	c.mu.Unlock()
	nc, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, fmt.Errorf("dial S3 endpoint %s: %w", addr, err)
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return nil, false, fmt.Errorf("dial S3 endpoint %s: not a TCP connection", addr)
	}
	return &rawConn{conn: tc, br: bufio.NewReaderSize(tc, 16<<10)}, false, nil
}

// keep returns a connection at a response boundary to the idle list.
func (c *rawGetClient) keep(addr string, rc *rawConn) {
	rc.since = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	// The list is oldest first: close the expired ones here as well as
	// when a connection is taken (an endpoint no longer read keeps its
	// last connections until the server closes them).
	l := c.idle[addr]
	for len(l) > 0 && rc.since.Sub(l[0].since) >= rawIdleFor {
		l[0].conn.Close()
		l = l[1:]
	}
	if len(l) >= rawIdlePerHost {
		rc.conn.Close()
		c.idle[addr] = l
		return
	}
	c.idle[addr] = append(l, rc)
}

// roundTrip sends r on rc and reads the response's head. A 200 or 206
// with a Content-Length gets a rawBody; anything else (errors, chunked
// bodies) is read through net/http's body and the connection is closed
// after it.
func (c *rawGetClient) roundTrip(r *http.Request, rc *rawConn, addr string) (*http.Response, error) {
	ctx := r.Context()
	// A cancelled request unblocks whatever is reading or writing.
	stop := context.AfterFunc(ctx, func() { rc.conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		rc.conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	bw := bufio.NewWriterSize(rc.conn, 4<<10)
	if err := r.Write(bw); err != nil {
		return fail(fmt.Errorf("send GET to S3: %w", err))
	}
	if err := bw.Flush(); err != nil {
		return fail(fmt.Errorf("send GET to S3: %w", err))
	}
	resp, err := http.ReadResponse(rc.br, r)
	if err != nil {
		return fail(fmt.Errorf("read S3 response: %w", err))
	}
	ok := resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent
	if ok && resp.ContentLength >= 0 && len(resp.TransferEncoding) == 0 {
		// net/http's body would read through rc.br; rawBody reads the
		// same bytes, and can pass the rest to splice. (versitygw
		// answers "Connection: close" unless started with --keep-alive.)
		resp.Body = &rawBody{c: c, addr: addr, rc: rc, remain: resp.ContentLength, stop: stop, keep: !resp.Close}
		return resp, nil
	}
	resp.Body = &closingBody{ReadCloser: resp.Body, conn: rc.conn, stop: stop}
	return resp, nil
}

// closingBody closes the connection once its body is closed.
type closingBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

func (b *closingBody) Close() error {
	b.stop()
	return errors.Join(b.ReadCloser.Close(), b.conn.Close())
}

// rawBody is the remain bytes of a response left on rc.
type rawBody struct {
	c      *rawGetClient
	addr   string
	rc     *rawConn
	remain int64
	stop   func() bool
	keep   bool // the server keeps the connection open after the body
	err    error
	closed bool
}

func (b *rawBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.remain == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	// rc.br holds what came in with the head; then it reads p-sized
	// chunks straight into p (bufio does for reads larger than itself).
	n, err := b.rc.br.Read(p)
	b.remain -= int64(n)
	return n, b.fail(err)
}

// fail records err as the body's (io.ErrUnexpectedEOF for an early EOF).
func (b *rawBody) fail(err error) error {
	if err == io.EOF && b.remain > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		b.err = fmt.Errorf("read S3 object: %w: %w", ErrStoreUnavailable, err)
		return b.err
	}
	return err
}

// SendTo writes up to n bytes of the body to w: the few that arrived with
// the head through w.Write, the rest by w's ReadFrom of the connection
// itself, which for a response on a TCP connection is splice(2) from
// socket to socket; a w without ReadFrom gets a 1 MiB-buffer copy.
func (b *rawBody) SendTo(w io.Writer, n int64) (int64, error) {
	if b.err != nil {
		return 0, b.err
	}
	n = min(n, b.remain)
	var sent int64
	if k := int64(b.rc.br.Buffered()); k > 0 && n > 0 {
		head, _ := b.rc.br.Peek(int(min(k, n)))
		m, err := w.Write(head)
		b.rc.br.Discard(m)
		sent, b.remain = int64(m), b.remain-int64(m)
		if err != nil {
			return sent, err
		}
	}
	if sent == n {
		return sent, nil
	}
	lr := &io.LimitedReader{R: b.rc.conn, N: n - sent}
	var m int64
	var err error
	if rf, ok := w.(io.ReaderFrom); ok {
		m, err = rf.ReadFrom(lr)
	} else {
		bp := bufPool.Get().(*[]byte)
		m, err = io.CopyBuffer(struct{ io.Writer }{w}, lr, *bp)
		bufPool.Put(bp)
	}
	sent += m
	b.remain -= m
	if err == nil && lr.N > 0 {
		err = io.EOF // the connection ended before the body
	}
	if err != nil {
		// Either side may have failed; the connection is not reusable
		// and the body is over either way.
		if b.err == nil {
			b.err = fmt.Errorf("send S3 object: %w", err)
		}
		return sent, b.err
	}
	return sent, nil
}

// Close keeps the connection when the body was read to its end and the
// request's context is still live, and closes it otherwise.
func (b *rawBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.stop() && b.keep && b.remain == 0 && b.err == nil {
		b.c.keep(b.addr, b.rc)
		return nil
	}
	return b.rc.conn.Close()
}
