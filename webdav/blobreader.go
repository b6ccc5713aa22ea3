package webdav

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// Reading a file of the node backend: http.ServeContent reads a
// blobReader, which opens ranged reads of the contents store as the
// request's ranges need them.

// bigCopyWriter sends a blobReader's bytes as its body can (contents.Sender:
// S3 over plain HTTP splices socket to socket) and copies anything else
// through a pooled 1 MiB buffer instead of io.Copy's 32 KiB: a store's
// stream cannot be sent with sendfile, and larger reads and writes cut
// the syscalls per byte on both sockets.
type bigCopyWriter struct {
	http.ResponseWriter
	splice bool // the response's connection can take ReadFrom (no TLS)
}

func (w bigCopyWriter) ReadFrom(r io.Reader) (int64, error) {
	out := io.Writer(struct{ io.Writer }{w.ResponseWriter})
	if w.splice {
		out = w.ResponseWriter
	}
	if lr, ok := r.(*io.LimitedReader); ok {
		if br, ok := lr.R.(*blobReader); ok {
			return br.sendTo(out, lr)
		}
	}
	return copyBig(w.ResponseWriter, r)
}

// copyBig copies r to w through a pooled 1 MiB buffer.
func copyBig(w io.Writer, r io.Reader) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *bp)
}

// span is n bytes of a file from off.
type span struct{ off, n int64 }

// requestedSpans reads a Range header as http.ServeContent does: the
// ranges it will send (nil: the whole file), and false when it will
// answer 416 without reading. The spans only size the store's reads
// (blobReader), so a header read differently here costs a GET, not
// correctness.
func requestedSpans(rng string, size int64) ([]span, bool) {
	if rng == "" {
		return nil, true
	}
	spec, ok := strings.CutPrefix(rng, "bytes=")
	if !ok {
		return nil, false
	}
	var spans []span
	var noOverlap bool
	var sum int64
	for ra := range strings.SplitSeq(spec, ",") {
		ra = strings.TrimSpace(ra)
		if ra == "" {
			continue
		}
		first, last, ok := strings.Cut(ra, "-")
		if !ok {
			return nil, false
		}
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		var sp span
		if first == "" { // the last N bytes
			k, err := strconv.ParseInt(last, 10, 64)
			if last == "" || last[0] == '-' || err != nil || k < 0 {
				return nil, false
			}
			sp = span{off: size - min(k, size), n: min(k, size)}
		} else {
			i, err := strconv.ParseInt(first, 10, 64)
			if err != nil || i < 0 {
				return nil, false
			}
			if i >= size {
				noOverlap = true
				continue
			}
			sp = span{off: i, n: size - i}
			if last != "" {
				j, err := strconv.ParseInt(last, 10, 64)
				if err != nil || i > j {
					return nil, false
				}
				sp.n = min(j, size-1) - i + 1
			}
		}
		spans = append(spans, sp)
		sum += sp.n
	}
	if noOverlap && len(spans) == 0 {
		return nil, false
	}
	if sum > size { // ServeContent sends the whole file instead
		return nil, true
	}
	return spans, true
}

// blobReader is an io.ReadSeeker over an object, for http.ServeContent:
// seeking costs nothing, a read opens a ranged GET from the offset (kept
// open while reads follow on) to the end of the requested span starting
// there, or of the object.
type blobReader struct {
	ctx   context.Context
	c     contents.Store
	key   string
	size  int64
	spans []span // the request's ranges
	off   int64
	body  io.ReadCloser
	at    int64 // the offset body reads next
	end   int64 // where body ends
}

func (b *blobReader) open(off int64) error {
	if b.body != nil && b.at == off && off < b.end {
		return nil
	}
	b.Close()
	var span int64 // the longest requested span starting at off
	for _, sp := range b.spans {
		if sp.off == off {
			span = max(span, sp.n)
		}
	}
	end := b.size
	if span > 0 {
		end = off + span
	}
	n := end - off
	if end == b.size {
		n = -1 // to the end: a whole file is a plain GET
	}
	body, err := b.c.Get(b.ctx, b.key, off, n)
	if err != nil {
		return err
	}
	b.body, b.at, b.off, b.end = body, off, off, end
	return nil
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	if err := b.open(b.off); err != nil {
		return 0, err
	}
	n, err := b.body.Read(p)
	b.off += int64(n)
	b.at = b.off
	if err == io.EOF {
		switch {
		case b.off < b.end:
			err = io.ErrUnexpectedEOF
		case b.off < b.size:
			err = nil // the span ended; the next read opens another
		}
	}
	return n, err
}

// sendTo sends lr's bytes (lr.R is b) to w, letting the body send them
// itself where it can.
func (b *blobReader) sendTo(w io.Writer, lr *io.LimitedReader) (int64, error) {
	var sent int64
	for lr.N > 0 && b.off < b.size {
		if err := b.open(b.off); err != nil {
			return sent, err
		}
		bs, ok := b.body.(contents.Sender)
		if !ok {
			break
		}
		want := min(lr.N, b.end-b.off)
		k, err := bs.SendTo(w, want)
		sent, lr.N, b.off = sent+k, lr.N-k, b.off+k
		b.at = b.off
		if err == nil && k < want {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return sent, err
		}
	}
	k, err := copyBig(w, lr)
	return sent + k, err
}

func (b *blobReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += b.off
	case io.SeekEnd:
		off += b.size
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	b.off = off
	return off, nil
}

func (b *blobReader) Close() error {
	if b.body != nil {
		b.body.Close()
		b.body = nil
	}
	return nil
}
