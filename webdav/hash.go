package webdav

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/ontoflow/ontoflow/models"
)

// maxHashQueue caps the files waiting for background hashing.
const maxHashQueue = 1024

// hashLater records the MD5 and SHA-1 of a file in the background, one
// file at a time so hashing never takes more than one core. The sums are
// stored only if the file is unchanged (inode, size, mtime) after hashing.
// PROPFIND requests for checksums call it for files that have none, so
// uploads whose job was lost (restart, another replica) get hashed too.
func (h *Handler) hashLater(userID, p string) {
	// Bound the backlog: a PROPFIND over a huge folder of files put
	// there out of band must not queue a goroutine per file. What is
	// dropped is queued again by a later PROPFIND.
	if h.hashQueued.Load() >= maxHashQueue {
		return
	}
	key := userID + "\x00" + p
	if _, busy := h.hashing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	h.hashQueued.Add(1)
	go func() {
		defer h.hashQueued.Add(-1)
		defer h.hashing.Delete(key)
		h.hashSem <- struct{}{}
		defer func() { <-h.hashSem }()
		if err := h.hashFile(context.Background(), userID, p); err != nil {
			h.log.Warn("webdav checksum", "user_id", userID, "path", p, "err", err)
		}
	}()
}

func (h *Handler) hashFile(ctx context.Context, userID, p string) error {
	root, err := h.openRoot(userID)
	if err != nil {
		return fmt.Errorf("open user root: %w", err)
	}
	defer root.Close()
	f, err := root.Open(rel(p))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil || !before.Mode().IsRegular() {
		return err
	}
	// The record as it is before the read: its generation is kept, and
	// only it may be replaced (recordSum compares and swaps).
	prior, had, err := h.meta.recordOf(ctx, userID, p, f)
	if err != nil {
		return fmt.Errorf("read record: %w", err)
	}
	md, sh := md5.New(), sha1.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	if _, err := io.CopyBuffer(io.MultiWriter(md, sh), struct{ io.Reader }{f}, *bp); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	sum := models.DavChecksum{
		UserID: userID, Path: p, Size: before.Size(), MtimeNs: before.ModTime().UnixNano(),
		SHA1: hex.EncodeToString(sh.Sum(nil)), MD5: hex.EncodeToString(md.Sum(nil)),
		Gen: keptGen(prior, had, before),
	}
	var was *models.DavChecksum
	if had {
		was = &prior
	}
	if err := h.meta.recordSum(ctx, root, f, before, sum, was); err != nil {
		if errors.Is(err, errSumNotSet) {
			// Do not read it all again on every PROPFIND while it
			// stays the same.
			h.markUnhashable(userID, p, before)
		}
		return err
	}
	return nil
}

// maxUnhashable bounds the remembered files whose checksum could not be
// recorded; beyond it the memory is dropped and they are tried again.
const maxUnhashable = 10000

// markUnhashable remembers that this version of p (its ETag) could not
// take a checksum attribute.
func (h *Handler) markUnhashable(userID, p string, fi fs.FileInfo) {
	if h.unhashableN.Add(1) > maxUnhashable {
		h.unhashableSet.Clear()
		h.unhashableN.Store(1)
	}
	h.unhashableSet.Store(userID+"\x00"+p, statKey(fi))
}

// unhashable reports whether this version of p already failed to take a
// checksum.
func (h *Handler) unhashable(userID, p string, fi fs.FileInfo) bool {
	v, ok := h.unhashableSet.Load(userID + "\x00" + p)
	return ok && v.(string) == statKey(fi)
}

// keptGen is the generation the hashed version already has (a large
// upload's, drawn at its write), so adding its hashes keeps its ETag; a
// file without one (put there behind the server's back) gets a new one.
func keptGen(rec models.DavChecksum, ok bool, before fs.FileInfo) int64 {
	if ok && sumValid(rec, before) && rec.Gen != 0 {
		return rec.Gen
	}
	return newGen()
}
