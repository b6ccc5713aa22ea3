package webdav

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
)

// serveCopyMove copies or moves the resource to the Destination (RFC 4918
// §9.8, §9.9); locks never travel with it (§7.5). The storage carries out
// what the checks, the locks and the quota admitted.
func (rq *request) serveCopyMove() (int, error) {
	move := rq.r.Method == "MOVE"
	dst, infinite, overwrite, err := rq.copyMoveHeaders(move)
	if err != nil {
		return 0, err
	}
	sfi, err := rq.stat(rq.path)
	if err != nil {
		return statFailure(err)
	}
	dfi, dexists, err := rq.checkCopyMoveTarget(dst, sfi, overwrite)
	if err != nil {
		return 0, err
	}
	targets := []target{{path: dst, membership: true, subtree: true}}
	if move {
		targets = append(targets, target{path: rq.path, membership: true, subtree: true})
	}
	if _, err := rq.precheck(targets...); err != nil {
		return 0, err
	}
	if !move {
		settle, err := rq.admitCopy(dst, sfi, dfi, dexists, infinite)
		if err != nil {
			return 0, err
		}
		defer settle()
	}
	op := copyMove{move: move, src: rq.path, dst: dst, sfi: sfi, infinite: infinite,
		replace: dexists && !dfi.IsDir() && !sfi.IsDir()}
	if dexists {
		op.dfi = dfi
	}
	if err := rq.tree.copyMove(rq.r.Context(), op); err != nil {
		var de *davError
		if errors.As(err, &de) {
			return de.status, err
		}
		return internal(fmt.Errorf("%s: %w", strings.ToLower(rq.r.Method), err))
	}
	if dexists {
		return http.StatusNoContent, nil
	}
	rq.w.Header().Set("Location", rq.h.href(dst, sfi.IsDir()))
	return http.StatusCreated, nil
}

// copyMoveHeaders reads Destination, Depth and Overwrite.
func (rq *request) copyMoveHeaders(move bool) (dst string, infinite, overwrite bool, err error) {
	h := rq.h
	dh := rq.r.Header.Get("Destination")
	if dh == "" {
		return "", false, false, refusal(http.StatusBadRequest, "missing Destination")
	}
	u, err := url.Parse(dh)
	if err != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(dh, "#") {
		// A raw '?' or '#' would cut the name short and aim the MOVE or
		// COPY at another resource (an existing parent, say, which
		// Overwrite: T would then delete); clients percent-encode them.
		return "", false, false, refusal(http.StatusBadRequest, "malformed Destination (a '?' or '#' in a name must be percent-encoded)")
	}
	if u.Host != "" && !strings.EqualFold(u.Host, rq.r.Host) {
		return "", false, false, refusal(http.StatusBadGateway, "Destination is on another server")
	}
	if u.Path != h.opts.Prefix && !strings.HasPrefix(u.Path, h.opts.Prefix+"/") {
		return "", false, false, refusal(http.StatusForbidden, "Destination is outside the WebDAV tree")
	}
	dst, ok := h.internalPath(u.Path)
	if !ok {
		return "", false, false, refusal(http.StatusBadRequest, "invalid Destination")
	}
	if isReserved(dst) || dst == "/" || rq.path == "/" {
		return "", false, false, refusal(http.StatusForbidden, "forbidden")
	}
	infinite = true
	switch d := rq.r.Header.Get("Depth"); {
	case d == "" || strings.EqualFold(d, "infinity"):
	case d == "0" && !move:
		infinite = false
	default:
		return "", false, false, refusal(http.StatusBadRequest, "invalid Depth")
	}
	overwrite = true
	switch rq.r.Header.Get("Overwrite") {
	case "", "T", "t":
	case "F", "f":
		overwrite = false
	default:
		return "", false, false, refusal(http.StatusBadRequest, "invalid Overwrite")
	}
	return dst, infinite, overwrite, nil
}

// checkCopyMoveTarget refuses destinations the source cannot go to and
// stats the destination.
func (rq *request) checkCopyMoveTarget(dst string, sfi fs.FileInfo, overwrite bool) (dfi fs.FileInfo, dexists bool, err error) {
	if dst == rq.path {
		return nil, false, refusal(http.StatusForbidden, "source and destination are the same")
	}
	if sfi.IsDir() && isUnder(dst, rq.path) {
		return nil, false, refusal(http.StatusForbidden, "destination is inside the source")
	}
	if isUnder(rq.path, dst) {
		// Overwriting an ancestor would delete the source with it.
		return nil, false, refusal(http.StatusForbidden, "destination contains the source")
	}
	pfi, err := rq.stat(pathParent(dst))
	if err != nil || !pfi.IsDir() {
		return nil, false, refusal(http.StatusConflict, "destination parent does not exist")
	}
	dfi, err = rq.lstat(dst)
	dexists = err == nil
	if dexists && !overwrite {
		return nil, false, refusal(http.StatusPreconditionFailed, "destination exists")
	}
	return dfi, dexists, nil
}

// admitCopy reserves a COPY's growth of the tree (the source's size less
// the replaced destination's) against the user's quota: 507 when it does
// not fit. settle ends the reservation.
func (rq *request) admitCopy(dst string, sfi, dfi fs.FileInfo, dexists, infinite bool) (settle func(), err error) {
	q := rq.h.quota
	quota := q.of(rq.user)
	if quota <= 0 {
		return func() {}, nil
	}
	size := func(p string, fi fs.FileInfo, deep bool) (int64, error) {
		if fi.IsDir() && !deep {
			return 0, nil
		}
		return rq.tree.fileBytes(rq.r.Context(), p, fi)
	}
	grow, err := size(rq.path, sfi, infinite)
	if err == nil && dexists {
		var freed int64
		freed, err = size(dst, dfi, true)
		grow -= freed
	}
	ok := false
	if err == nil {
		ok, err = q.admit(rq.r.Context(), rq.tree, rq.user.ID, quota, grow)
	}
	if err != nil {
		return nil, fmt.Errorf("admit copy: %w", err)
	}
	if !ok {
		return nil, refusal(http.StatusInsufficientStorage, "quota exceeded")
	}
	// The copy invalidates the cached usage whatever happens; only the
	// reservation is left to release.
	return func() { q.settle(rq.user.ID, grow, false) }, nil
}
