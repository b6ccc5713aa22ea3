package webdav

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io/fs"
	"strconv"

	"github.com/ontoflow/ontoflow/models"
)

// A POSIX file's identity (issue 41 item 1). Inode, modification time and
// size alone are not one: a client sets the mtime (X-OC-Mtime, PROPPATCH),
// chooses the size, and the file system hands a freed inode to the next
// upload, so two contents could share a tag and every cache, sync client,
// If-Match and remembered digest keyed on it would be told nothing
// changed. Each written version therefore gets a generation: 32 random
// bits drawn at the write, recorded with the version's checksum record
// (the attribute that travels with the inode, or the dav_checksums row)
// and part of the ETag. A content cannot take an older version's
// generation: every upload draws a new one, and only MOVE, COPY and
// PROPPATCH of the mtime (which keep the bytes) carry one over.
//
// Where no valid record exists (a file put there behind the server's
// back, or one whose record could not be written) the tag ends in the
// inode's change time instead, which no client can set: the write, the
// rename and every chtimes move it. Its resolution is the file system's
// clock tick, which is why it is only the fallback.

// newGen draws a version's generation: never 0, which marks records
// written before generations existed.
func newGen() int64 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("webdav: no randomness: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	if g := int64(binary.BigEndian.Uint32(b[:])); g != 0 {
		return g
	}
	return 1
}

// recordGen is the generation a record names: its own, or for a record
// written before generations existed (which always carries the hashes of
// the bytes it describes) the first 32 bits of its SHA-1, equally bound to
// the content. 0: the record names none and is not an identity.
func recordGen(s models.DavChecksum) int64 {
	if s.Gen != 0 {
		return s.Gen
	}
	if b, err := hex.DecodeString(s.SHA1); err == nil && len(b) >= 4 {
		return int64(binary.BigEndian.Uint32(b))
	}
	return 0
}

// hasHashes: the record carries the content's SHA-1 and MD5 (a large
// upload's record has only its generation until it is hashed).
func hasHashes(s models.DavChecksum) bool { return s.SHA1 != "" && s.MD5 != "" }

// statBase is the part of a POSIX tag a stat gives: inode, mtime (ns) and
// size, in hex.
func statBase(b []byte, fi fs.FileInfo) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, fileID(fi), 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, fi.Size(), 16)
	return b
}

// appendCtime adds "-c" and the change time where the platform reports
// one (not on Windows, whose tags rest on mtime, size and generation).
func appendCtime(b []byte, fi fs.FileInfo) []byte {
	if ns, ok := changeTime(fi); ok {
		b = append(b, "-c"...)
		b = strconv.AppendInt(b, ns, 16)
	}
	return b
}

// posixETag is the strong entity tag of fi given its checksum record (ok:
// one was found). withCtime: the store publishes a version before its
// record (the database store), so the change time tells the new version
// from the old one's record in between. Collections and files without a
// valid record end in the change time.
func posixETag(fi fs.FileInfo, rec models.DavChecksum, ok, withCtime bool) string {
	b := statBase(make([]byte, 0, 72), fi)
	gen := int64(0)
	if ok && fi.Mode().IsRegular() && sumValid(rec, fi) {
		gen = recordGen(rec)
	}
	if gen == 0 || withCtime {
		b = appendCtime(b, fi)
	}
	if gen != 0 {
		b = append(b, "-g"...)
		b = strconv.AppendInt(b, gen, 16)
	}
	return string(append(b, '"'))
}

// statKey names the state of a file as a stat sees it (inode, mtime, size,
// change time): what the background hasher compares before and after
// reading, never shown to clients.
func statKey(fi fs.FileInfo) string {
	return string(append(appendCtime(statBase(make([]byte, 0, 64), fi), fi), '"'))
}
