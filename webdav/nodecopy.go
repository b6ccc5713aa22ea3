package webdav

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// COPY and MOVE in tree mode are database work only, in one transaction
// each: a MOVE rewrites the moved node's parent and name (one row however
// much lies below); a COPY inserts new nodes that share the source's
// immutable objects (no byte is copied in S3; blobs.go orders a COPY
// against a concurrent reclaim of those objects).

func (rq *request) nodeCopyMove() (int, error) {
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
	replace := dexists && !dfi.IsDir() && !sfi.IsDir()
	var dnode *models.DavNode
	if dexists {
		dnode = nodeOf(dfi)
	}
	for attempt := 0; ; attempt++ {
		err = rq.h.db.WithContext(rq.r.Context()).Transaction(func(tx *gorm.DB) error {
			return rq.nodeCopyMoveTx(tx, move, nodeOf(sfi), dst, dnode, replace, infinite)
		})
		if !errors.Is(err, errShareLost) || attempt == 2 {
			break
		}
	}
	rq.h.locksChanged()
	rq.h.quota.invalidate(rq.user.ID)
	if !move {
		rq.h.meta.propsWritten()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errParentMoved):
		return refuse(http.StatusConflict, "the source or destination changed during the request")
	case errors.Is(err, errExists):
		return refuse(http.StatusPreconditionFailed, "destination exists")
	case err != nil:
		return internal(fmt.Errorf("%s: %w", rq.r.Method, err))
	}
	if dnode != nil && !dnode.Dir {
		rq.reclaimLater(dnode.Blob)
	}
	if dexists {
		return http.StatusNoContent, nil
	}
	rq.w.Header().Set("Location", rq.h.href(dst, sfi.IsDir()))
	return http.StatusCreated, nil
}

// errShareLost: a blob the COPY would share was reclaimed meanwhile.
var errShareLost = errors.New("a shared object was reclaimed during the copy")

func (rq *request) nodeCopyMoveTx(tx *gorm.DB, move bool, src *models.DavNode, dst string, dnode *models.DavNode, replace, infinite bool) error {
	ctx, uid, meta := rq.r.Context(), rq.user.ID, rq.h.meta
	if dnode != nil {
		if err := deleteSubtree(tx, dnode.ID); err != nil {
			return err
		}
		if !replace {
			// Locks rooted at dst stay and cover what replaces it.
			if err := dropLocksBelow(tx, uid, dst); err != nil {
				return err
			}
		}
	}
	if err := meta.dropTx(tx, uid, dst); err != nil {
		return err
	}
	dparent, err := rq.h.nodes.tree.lookup(ctx, tx, uid, pathParent(dst))
	if err != nil || !dparent.Dir {
		return errParentMoved
	}
	if move {
		if err := moveNode(tx, src, dparent.ID, pathBase(dst)); err != nil {
			return err
		}
		if err := touchDir(tx, src.ParentID); err != nil {
			return err
		}
		if err := touchDir(tx, dparent.ID); err != nil {
			return err
		}
		if err := meta.moveTx(tx, uid, rq.path, dst); err != nil {
			return err
		}
		return dropLocks(tx, uid, rq.path)
	}
	if err := copyNodes(tx, src.ID, dparent.ID, pathBase(dst), infinite); err != nil {
		return err
	}
	if err := touchDir(tx, dparent.ID); err != nil {
		return err
	}
	return meta.copyTx(tx, uid, rq.path, dst, infinite)
}
