package webdav

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"sync"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// hashReader computes MD5, SHA-1 and SHA-256 of what is read through it,
// and remembers the first error of the underlying reader (the client's
// body), to tell an aborted upload from a failing store.
//
// A body of hashPipeMin bytes or more (or of unknown length) goes through
// a pipeline: the reader reads it in hashChunk chunks into a ring of
// hashSlots buffers, hands each chunk to three goroutines (one per
// digest, MD5 alone runs at ~550 MiB/s on a core) and serves the
// caller's reads from it at once, so reading the body, hashing it and
// sending it on to the store overlap instead of taking turns per read
// (before, each 32 KiB read waited for its three digests before the bytes
// went on). A buffer is refilled only once its three digests are done
// with it: memory per upload is hashSlots x hashChunk, 1 MiB. Smaller
// bodies are hashed in the caller's goroutine.
//
// The body is read only within Read, by its caller (no read-ahead
// goroutine that could outlive the handler). That caller is the SDK's
// transport, which may still be in a Read when the upload has failed and
// the handler closes the reader: close only stops the digests (under mu),
// and the ring's buffers are left to the garbage collector rather than
// pooled, as a late Read may still fill one.
type hashReader struct {
	r       io.Reader
	hs      [3]hash.Hash
	readErr error

	// The pipeline (nil slots: hashed inline).
	slots []*hashSlot
	next  int               // the slot to fill next
	cur   []byte            // unread bytes of the last filled slot
	err   error             // what ended the last fill, returned once cur is read
	work  [3]chan *hashSlot // one goroutine per digest, chunks in order

	mu     sync.Mutex
	closed bool
}

const (
	hashPipeMin = 1 << 20
	hashChunk   = 256 << 10
	hashSlots   = 4
)

// hashSlot is one chunk buffer of the ring.
type hashSlot struct {
	buf  []byte
	n    int
	busy bool          // handed to the digests, done not yet collected
	done chan struct{} // one send per digest finished with buf[:n]
}

// newHashReader hashes r, a body of size bytes (-1: unknown).
func newHashReader(r io.Reader, size int64) *hashReader {
	h := &hashReader{r: r, hs: [3]hash.Hash{md5.New(), sha1.New(), sha256.New()}}
	if size < 0 || size >= hashPipeMin {
		h.startPipeline()
	}
	return h
}

func (h *hashReader) startPipeline() {
	h.slots = make([]*hashSlot, hashSlots)
	for i := range h.slots {
		h.slots[i] = &hashSlot{buf: make([]byte, hashChunk), done: make(chan struct{}, len(h.hs))}
	}
	for i, x := range h.hs {
		// Buffered for the whole ring: handing a chunk on never blocks.
		h.work[i] = make(chan *hashSlot, hashSlots)
		go func(x hash.Hash, in chan *hashSlot) {
			for s := range in {
				x.Write(s.buf[:s.n])
				s.done <- struct{}{}
			}
		}(x, h.work[i])
	}
}

func (h *hashReader) Read(p []byte) (int, error) {
	if h.slots == nil {
		n, err := h.r.Read(p)
		for _, x := range h.hs {
			x.Write(p[:n])
		}
		h.noteErr(err)
		return n, err
	}
	if len(h.cur) == 0 && h.err == nil {
		h.refill()
	}
	if len(h.cur) == 0 {
		return 0, h.err
	}
	n := copy(p, h.cur)
	h.cur = h.cur[n:]
	return n, nil
}

// refill reads the next chunk into the next slot once the digests are
// done with what it held, and hands it to them.
func (h *hashReader) refill() {
	s := h.slots[h.next]
	h.next = (h.next + 1) % len(h.slots)
	s.wait()
	n, err := contents.Fill(h.r, s.buf)
	h.noteErr(err)
	h.err = err
	if n == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		h.err = errHashClosed
		return
	}
	s.n, s.busy = n, true
	for _, w := range h.work {
		w <- s
	}
	h.cur = s.buf[:n]
}

var errHashClosed = errors.New("read after the upload ended")

func (h *hashReader) noteErr(err error) {
	if err != nil && err != io.EOF && h.readErr == nil {
		h.readErr = err
	}
}

// wait returns once the three digests are done with the slot's chunk.
func (s *hashSlot) wait() {
	if !s.busy {
		return
	}
	for range cap(s.done) {
		<-s.done
	}
	s.busy = false
}

// close ends the hashing goroutines once they are done with what they
// were handed. Safe to call more than once.
func (h *hashReader) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.slots == nil || h.closed {
		return
	}
	h.closed = true
	for _, w := range h.work {
		close(w)
	}
}

// sums returns the digests of everything read so far.
func (h *hashReader) sums() (md5sum, sha1sum, sha256sum string) {
	for _, s := range h.slots {
		s.wait()
	}
	return hex.EncodeToString(h.hs[0].Sum(nil)), hex.EncodeToString(h.hs[1].Sum(nil)), hex.EncodeToString(h.hs[2].Sum(nil))
}
