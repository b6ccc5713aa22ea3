package webdav

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

// The database tree of the tree + contents mode (store.go): one dav_nodes
// row per file or collection, children pointing at their parent's id, so
// renaming or moving a collection rewrites one row.

// tree reads and writes dav_nodes.
type tree struct {
	db    *gorm.DB
	roots cappedMap // user id -> int64: the root row's id, which never changes
}

func newTree(db *gorm.DB) *tree {
	t := &tree{db: db}
	t.roots.max = maxCachedUsers
	return t
}

// nodeInfo presents a node as an fs.FileInfo, so the handler's shared
// code (preconditions, PROPFIND rendering) takes either mode's entries.
type nodeInfo struct{ n *models.DavNode }

func (i nodeInfo) Name() string { return i.n.Name }
func (i nodeInfo) Size() int64 {
	if i.n.Dir {
		return 0
	}
	return i.n.Size
}
func (i nodeInfo) Mode() fs.FileMode {
	if i.n.Dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i nodeInfo) ModTime() time.Time { return time.Unix(0, i.n.MtimeNs) }
func (i nodeInfo) IsDir() bool        { return i.n.Dir }
func (i nodeInfo) Sys() any           { return i.n }

// nodeETag is a node's strong entity tag: its id and version, which every
// change of the node (contents, time, name) raises.
func nodeETag(n *models.DavNode) string {
	b := make([]byte, 0, 40)
	b = append(b, '"', 'n')
	b = strconv.AppendInt(b, n.ID, 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, n.Version, 16)
	b = append(b, '"')
	return string(b)
}

// rootID returns the id of the user's root collection, creating it on
// first use.
func (t *tree) rootID(ctx context.Context, userID string) (int64, error) {
	if v, ok := t.roots.Load(userID); ok {
		return v.(int64), nil
	}
	db := t.db.WithContext(ctx)
	var n models.DavNode
	err := db.Where("user_id = ? AND parent_id = 0 AND name = ''", userID).Take(&n).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		now := time.Now().UnixNano()
		n = models.DavNode{UserID: userID, Dir: true, MtimeNs: now, CreatedNs: now, Version: 1}
		if err = db.Clauses(clause.OnConflict{DoNothing: true}).Create(&n).Error; err == nil {
			err = db.Where("user_id = ? AND parent_id = 0 AND name = ''", userID).Take(&n).Error
		}
	}
	if err != nil {
		return 0, fmt.Errorf("open the user's root collection: %w", err)
	}
	t.roots.Store(userID, n.ID)
	return n.ID, nil
}

// lookup resolves p ("/" or "/a/b") in db (a transaction or the pool);
// fs.ErrNotExist when a segment is missing or a file is crossed.
func (t *tree) lookup(ctx context.Context, db *gorm.DB, userID, p string) (*models.DavNode, error) {
	id, err := t.rootID(ctx, userID)
	if err != nil {
		return nil, err
	}
	return walk(ctx, db, userID, id, p)
}

// existingRootID is the id of the user's root collection without making
// one: fs.ErrNotExist for a user with no tree (readers from outside the
// protocol must not create rows for whatever id they are given).
func (t *tree) existingRootID(ctx context.Context, userID string) (int64, error) {
	if v, ok := t.roots.Load(userID); ok {
		return v.(int64), nil
	}
	var n models.DavNode
	if err := t.db.WithContext(ctx).Where("user_id = ? AND parent_id = 0 AND name = ''", userID).Take(&n).Error; err != nil {
		return 0, notFound(err)
	}
	t.roots.Store(userID, n.ID)
	return n.ID, nil
}

// child is the entry name of collection dirID: one query, where a lookup
// of its path walks every segment again.
func (t *tree) child(ctx context.Context, userID string, dirID int64, name string) (*models.DavNode, error) {
	return childOf(t.db.WithContext(ctx), userID, dirID, name)
}

// childOf is the entry name of collection dirID in db.
func childOf(db *gorm.DB, userID string, dirID int64, name string) (*models.DavNode, error) {
	var n models.DavNode
	if err := db.Where("user_id = ? AND parent_id = ? AND name = ?", userID, dirID, name).Take(&n).Error; err != nil {
		return nil, notFound(err)
	}
	return &n, nil
}

// walk resolves p from the root collection id.
func walk(ctx context.Context, db *gorm.DB, userID string, id int64, p string) (*models.DavNode, error) {
	db = db.WithContext(ctx)
	var n models.DavNode
	if p == "/" {
		if err := db.Where("id = ?", id).Take(&n).Error; err != nil {
			return nil, notFound(err)
		}
		return &n, nil
	}
	segs := strings.Split(p[1:], "/")
	var c *models.DavNode
	for i, seg := range segs {
		var err error
		if c, err = childOf(db, userID, id, seg); err != nil {
			return nil, err
		}
		if !c.Dir && i < len(segs)-1 {
			return nil, fs.ErrNotExist
		}
		id = c.ID
	}
	return c, nil
}

func notFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fs.ErrNotExist
	}
	return fmt.Errorf("read the tree: %w", err)
}

// list returns up to limit children of dir named after after, by name.
func (t *tree) list(ctx context.Context, userID string, dirID int64, after string, limit int) ([]models.DavNode, error) {
	var ns []models.DavNode
	err := t.db.WithContext(ctx).Where("user_id = ? AND parent_id = ? AND name > ?", userID, dirID, after).
		Order("name").Limit(limit).Find(&ns).Error
	if err != nil {
		return nil, fmt.Errorf("list collection: %w", err)
	}
	return ns, nil
}

// recentFiles reads the user's limit most recently modified files.
func (t *tree) recentFiles(ctx context.Context, userID string, limit int) ([]models.DavNode, error) {
	var ns []models.DavNode
	err := t.db.WithContext(ctx).Where("user_id = ? AND dir = ?", userID, false).
		Order("mtime_ns DESC, id DESC").Limit(limit).Find(&ns).Error
	if err != nil {
		return nil, fmt.Errorf("read the user's recent files: %w", err)
	}
	return ns, nil
}

// links reads the parent and name (only) of the user's nodes ids.
func (t *tree) links(ctx context.Context, userID string, ids []int64) ([]models.DavNode, error) {
	var ps []models.DavNode
	if err := t.db.WithContext(ctx).Select("id", "parent_id", "name").
		Where("user_id = ? AND id IN ?", userID, ids).Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("read the folders of the user's recent files: %w", err)
	}
	return ps, nil
}

// usage sums the sizes of the user's files.
func (t *tree) usage(ctx context.Context, userID string) (int64, error) {
	var n int64
	err := t.db.WithContext(ctx).Raw("SELECT COALESCE(SUM(size), 0) FROM dav_nodes WHERE user_id = ? AND dir = ?", userID, false).Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("sum the tree's sizes: %w", err)
	}
	return n, nil
}

// subtreeCTE selects the ids of node ? and everything below it.
const subtreeCTE = `WITH RECURSIVE sub(id) AS (SELECT id FROM dav_nodes WHERE id = ? ` +
	`UNION ALL SELECT n.id FROM dav_nodes n JOIN sub ON n.parent_id = sub.id) `

// subtreeSize sums the file sizes of node id and below.
func subtreeSize(ctx context.Context, db *gorm.DB, id int64) (int64, error) {
	var n int64
	err := db.WithContext(ctx).Raw(subtreeCTE+"SELECT COALESCE(SUM(size), 0) FROM dav_nodes WHERE dir = ? AND id IN (SELECT id FROM sub)", id, false).Scan(&n).Error
	return n, err
}

// deleteSubtree removes node id and everything below it; their blobs are
// left to the sweep (or reclaimed by the caller).
func deleteSubtree(tx *gorm.DB, id int64) error {
	return tx.Exec(subtreeCTE+"DELETE FROM dav_nodes WHERE id IN (SELECT id FROM sub)", id).Error
}

// touchDir marks a collection's membership changed: a new mtime and
// version, hence a new ETag, as a directory's mtime moves in POSIX mode.
func touchDir(tx *gorm.DB, id int64) error {
	return tx.Exec("UPDATE dav_nodes SET mtime_ns = ?, version = version + 1 WHERE id = ?", time.Now().UnixNano(), id).Error
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

// setNodeMtimeTx sets a node's modification time (its checksums stay
// valid: the contents did not change).
func setNodeMtimeTx(tx *gorm.DB, id int64, mtime time.Time) error {
	return tx.Exec("UPDATE dav_nodes SET mtime_ns = ?, version = version + 1 WHERE id = ?", mtime.UnixNano(), id).Error
}

// writeFileTx records file node n: a new row when old is nil (refused
// with errChanged when another request created the name first), else the
// update of old's row, refused with errChanged when old changed since it
// was read.
func writeFileTx(tx *gorm.DB, old, n *models.DavNode) error {
	if old == nil {
		if err := tx.Create(n).Error; err != nil {
			return errChanged // the unique name: another PUT or MKCOL created it first
		}
		return nil
	}
	n.ID, n.CreatedNs, n.Version = old.ID, old.CreatedNs, old.Version+1
	res := tx.Model(&models.DavNode{}).Where("id = ? AND version = ?", old.ID, old.Version).Updates(map[string]any{
		"size": n.Size, "mtime_ns": n.MtimeNs, "md5": n.MD5, "sha1": n.SHA1, "sha256": n.SHA256, "blob_key": n.Blob, "version": n.Version,
	})
	if res.Error != nil {
		return fmt.Errorf("update file node: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return errChanged
	}
	return nil
}

// createNodeTx adds node n to its parent, refused with errExists when the
// name was taken meanwhile; the parent's ETag changes with its members.
func createNodeTx(tx *gorm.DB, n *models.DavNode) error {
	if err := tx.Create(n).Error; err != nil {
		return errExists // the unique name
	}
	return touchDir(tx, n.ParentID)
}
