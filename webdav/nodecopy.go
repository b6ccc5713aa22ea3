package webdav

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"

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

// moveNode gives node src a new parent and name, refusing to put a
// collection inside itself (a concurrent MOVE could otherwise make a
// cycle the path checks never saw).
func moveNode(tx *gorm.DB, src *models.DavNode, parentID int64, name string) error {
	for id := parentID; id != 0; {
		if id == src.ID {
			return errParentMoved
		}
		var p models.DavNode
		if err := tx.Select("id", "parent_id").Where("id = ?", id).Take(&p).Error; err != nil {
			return notFound(err)
		}
		id = p.ParentID
	}
	res := tx.Exec("UPDATE dav_nodes SET parent_id = ?, name = ?, version = version + 1 WHERE id = ?", parentID, name, src.ID)
	if res.Error != nil {
		return errExists // the unique name: created meanwhile
	}
	if res.RowsAffected != 1 {
		return fs.ErrNotExist
	}
	return nil
}

// copyNodes copies node srcID (and, when deep, everything below it) under
// parentID as name, sharing the files' objects.
func copyNodes(tx *gorm.DB, srcID, parentID int64, name string, deep bool) error {
	var src models.DavNode
	if err := tx.Where("id = ?", srcID).Take(&src).Error; err != nil {
		return notFound(err)
	}
	// Read the whole source first and take its objects' rows, then write.
	type level struct {
		from int64
		kids []models.DavNode
	}
	var levels []level
	keys := map[string]bool{}
	if src.Blob != "" {
		keys[src.Blob] = true
	}
	if src.Dir && deep {
		queue := []int64{src.ID}
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			var kids []models.DavNode
			if err := tx.Where("parent_id = ?", id).Order("name").Find(&kids).Error; err != nil {
				return err
			}
			for _, k := range kids {
				if k.Dir {
					queue = append(queue, k.ID)
				} else if k.Blob != "" {
					keys[k.Blob] = true
				}
			}
			levels = append(levels, level{from: id, kids: kids})
		}
	}
	list := make([]string, 0, len(keys))
	for k := range keys {
		list = append(list, k)
	}
	for i := 0; i < len(list); i += batchPaths {
		ok, err := shareTx(tx, list[i:min(i+batchPaths, len(list))])
		if err != nil {
			return err
		}
		if !ok {
			return errShareLost
		}
	}
	now := time.Now().UnixNano()
	top := src
	top.ID, top.ParentID, top.Name, top.Version, top.CreatedNs = 0, parentID, name, 1, now
	if err := tx.Create(&top).Error; err != nil {
		return errExists
	}
	newID := map[int64]int64{src.ID: top.ID}
	for _, l := range levels {
		var files []models.DavNode
		for _, k := range l.kids {
			c := k
			c.ID, c.ParentID, c.Version, c.CreatedNs = 0, newID[l.from], 1, now
			if !k.Dir {
				files = append(files, c)
				continue
			}
			if err := tx.Create(&c).Error; err != nil {
				return err
			}
			newID[k.ID] = c.ID
		}
		if len(files) > 0 {
			if err := tx.CreateInBatches(files, 200).Error; err != nil {
				return err
			}
		}
	}
	return nil
}
