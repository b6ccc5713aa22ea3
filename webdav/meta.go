package webdav

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

// metaStore keeps what a resource has beyond its bytes: its dead
// properties and its content checksum. New picks one implementation for
// the handler's life: dbStore keeps both in the database; xattrStore
// (sums.go) keeps checksums on the files in an extended attribute and the
// dead properties in the database like dbStore, whose code it reuses. No
// handler asks which one it has.
//
// The *Tx methods run inside the caller's transaction, so a resource's
// metadata moves, is copied or goes together with its locks.
type metaStore interface {
	// kind names where checksums live, for logs.
	kind() string
	deadProps
	checksums
	// dropTx drops the metadata of p and below.
	dropTx(tx *gorm.DB, userID, p string) error
	// moveTx renames the metadata of src and below to dst.
	moveTx(tx *gorm.DB, userID, src, dst string) error
	// copyTx copies the metadata of src (and below when infinite) to dst.
	copyTx(tx *gorm.DB, userID, src, dst string, infinite bool) error
}

// deadProps: the properties clients set with PROPPATCH (RFC 4918 §4).
type deadProps interface {
	// hasProps reports whether the user has any dead property at all.
	hasProps(ctx context.Context, userID string) (bool, error)
	// propsFor loads the dead properties of paths.
	propsFor(ctx context.Context, userID string, paths []string) (map[string][]models.DavProp, error)
	// setProps sets and removes the dead properties of p (PROPPATCH).
	setProps(tx *gorm.DB, userID, p string, ops []propOp) error
	// propBytes sums what the user's dead properties count against the
	// quota.
	propBytes(ctx context.Context, userID string) (int64, error)
	// dropPropsTx drops the dead properties of p alone (not below it):
	// a file created at p must not inherit those of one deleted there.
	dropPropsTx(tx *gorm.DB, userID, p string) error
	// propsWritten runs after any write that may have added a property.
	propsWritten()
}

// checksums: the SHA-1 and MD5 of file contents, published as ownCloud's
// oc:checksums; each is valid only while the file keeps the size and
// modification time it was computed for.
type checksums interface {
	// sumsFor reads the valid-or-not checksums recorded for the entries
	// of a batch (dir: their open directory, or nil); callers check them
	// with sumValid.
	sumsFor(ctx context.Context, root *os.Root, userID string, dir *os.File, batch []entry) (map[string]models.DavChecksum, error)
	// recordOf reads the record of the one file at p; f is that file,
	// open.
	recordOf(ctx context.Context, userID, p string, f *os.File) (models.DavChecksum, bool, error)
	// etag is the entity tag of fi given its record (identity.go), in
	// the shape this store's order of publication needs.
	etag(fi fs.FileInfo, rec models.DavChecksum, ok bool) string
	// sealUpload runs on an upload's finished temporary file, before it
	// is closed; sum is nil when the body was not hashed as it streamed.
	sealUpload(f *os.File, sum *models.DavChecksum) error
	// commitUpload publishes an upload (c.publish renames it into place)
	// and records its metadata.
	commitUpload(ctx context.Context, c uploadCommit) error
	// recordSum records the checksum of a file hashed in the background:
	// f is the open file that was read, before its state then, prior the
	// record read before the hashing began (nil: there was none).
	recordSum(ctx context.Context, root *os.Root, f *os.File, before fs.FileInfo, sum models.DavChecksum, prior *models.DavChecksum) error
	// copySum gives out (a copy of in, with fi's size and mtime) in's
	// checksum.
	copySum(in, out *os.File, fi fs.FileInfo) error
	// chtimes sets p's modification time and carries a valid checksum
	// along: the content did not change.
	chtimes(tx *gorm.DB, root *os.Root, userID, p string, fi fs.FileInfo, mtime time.Time) error
}

// uploadCommit is what commitUpload needs of a finished upload.
type uploadCommit struct {
	userID, path string
	created      bool                // the path was new
	sum          *models.DavChecksum // nil: hashed later
	publish      func() error        // renames the temporary into place
	published    *bool               // set once publish succeeded
}

// dbStore keeps dead properties and checksums in the database
// (dav_props, dav_checksums).
type dbStore struct {
	db  *gorm.DB
	gen *generations // the properties counter (gen.go)
	// noProps caches users found to have no dead property (dropStaleProps).
	noProps cappedMap // user id -> noPropsEntry (maxCachedUsers)
	// stripe serialises the publication of one path's upload with its
	// database record, so records follow the renames in their order.
	stripe [256]sync.Mutex
	// commitCh feeds the group-commit writer (commit.go).
	commitOnce sync.Once
	commitCh   chan *putMeta
}

func newDBStore(db *gorm.DB, gen *generations) *dbStore {
	s := &dbStore{db: db, gen: gen}
	s.noProps.max = maxCachedUsers
	return s
}

func (s *dbStore) kind() string { return "database" }

// batchPaths bounds IN lists.
const batchPaths = 500

func (s *dbStore) hasProps(ctx context.Context, userID string) (bool, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw("SELECT 1 FROM dav_props WHERE user_id = ? LIMIT 1", userID).Scan(&n).Error; err != nil {
		return false, fmt.Errorf("look for dead properties: %w", err)
	}
	return n == 1, nil
}

func (s *dbStore) propsFor(ctx context.Context, userID string, paths []string) (map[string][]models.DavProp, error) {
	out := map[string][]models.DavProp{}
	for len(paths) > 0 {
		n := min(len(paths), batchPaths)
		var rows []models.DavProp
		if err := s.db.WithContext(ctx).Where("user_id = ? AND path IN ?", userID, paths[:n]).
			Order("path, space, name").Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("read dead properties: %w", err)
		}
		for _, r := range rows {
			out[r.Path] = append(out[r.Path], r)
		}
		paths = paths[n:]
	}
	return out, nil
}

func (s *dbStore) setProps(tx *gorm.DB, userID, p string, ops []propOp) error {
	for _, op := range ops {
		n := op.node.Name
		if n.Space == nsDAV && mtimeProp(n) {
			continue
		}
		if op.remove {
			if err := tx.Where("user_id = ? AND path = ? AND space = ? AND name = ?", userID, p, n.Space, n.Local).
				Delete(&models.DavProp{}).Error; err != nil {
				return fmt.Errorf("remove dead property: %w", err)
			}
			continue
		}
		row := models.DavProp{UserID: userID, Path: p, Space: n.Space, Name: n.Local, Value: op.node.inner(), Lang: op.node.Lang}
		if err := tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
			return fmt.Errorf("set dead property: %w", err)
		}
	}
	return nil
}

// propBytes: issue 13 item 9, dead properties count against the quota
// like file bytes.
func (s *dbStore) propBytes(ctx context.Context, userID string) (int64, error) {
	q := "SELECT COALESCE(SUM(length(CAST(space AS BLOB)) + length(CAST(name AS BLOB)) + length(CAST(value AS BLOB)) + length(CAST(lang AS BLOB))), 0) FROM dav_props WHERE user_id = ?"
	if models.IsPostgres(s.db) {
		q = "SELECT COALESCE(SUM(octet_length(space) + octet_length(name) + octet_length(value) + octet_length(lang)), 0) FROM dav_props WHERE user_id = ?"
	}
	var n int64
	if err := s.db.WithContext(ctx).Raw(q, userID).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("sum dead property sizes: %w", err)
	}
	return n, nil
}

// propsWritten invalidates the no-properties cache. It runs after the
// write has ended: a query that began before it carries the older
// generation, so its answer is never trusted.
func (s *dbStore) propsWritten() { s.gen.bump(genProps) }

// dropStaleProps removes dead properties left at a path that holds no
// resource (a file deleted behind the server's back, or a crash between
// removing a file and its metadata), so a new file never inherits them.
//
// Every new file asks, so the common answer is cached: a user found to
// have no dead property at all is skipped for noPropsTTL, unless a
// property is written meanwhile (by any process on a SQLite database,
// whose change counters are shared; by this one on Postgres). What the
// Postgres case can miss is a property another replica set in that window
// on a path whose file then vanished behind the servers' backs: too narrow
// to be worth a query per upload. PROPFIND never uses the cache.
func (s *dbStore) dropStaleProps(ctx context.Context, userID, p string) error {
	gen := s.gen.load(genProps)
	if v, ok := s.noProps.Load(userID); ok {
		if e := v.(noPropsEntry); e.gen == gen && time.Since(e.at) < noPropsTTL {
			return nil
		}
	}
	at := time.Now()
	has, err := s.hasProps(ctx, userID)
	if err != nil {
		return err
	}
	if !has {
		s.noProps.Store(userID, noPropsEntry{at: at, gen: gen})
		return nil
	}
	s.noProps.Delete(userID)
	var n int64
	if err := s.db.WithContext(ctx).Raw("SELECT 1 FROM dav_props WHERE user_id = ? AND path = ? LIMIT 1", userID, p).Scan(&n).Error; err != nil {
		return fmt.Errorf("look for stale properties: %w", err)
	}
	if n == 0 {
		return nil
	}
	if err := s.db.WithContext(ctx).Exec("DELETE FROM dav_props WHERE user_id = ? AND path = ?", userID, p).Error; err != nil {
		return fmt.Errorf("drop stale properties: %w", err)
	}
	return nil
}

// noPropsTTL bounds how long "this user has no dead properties" is
// trusted (the same order as auth's user cache).
const noPropsTTL = 2 * time.Second

type noPropsEntry struct {
	at  time.Time
	gen uint64 // the properties counter when the query began
}

func (s *dbStore) sumsFor(ctx context.Context, _ *os.Root, userID string, _ *os.File, batch []entry) (map[string]models.DavChecksum, error) {
	paths := make([]string, len(batch))
	for i, e := range batch {
		paths[i] = e.path
	}
	out := map[string]models.DavChecksum{}
	for len(paths) > 0 {
		n := min(len(paths), batchPaths)
		var rows []models.DavChecksum
		if err := s.db.WithContext(ctx).Where("user_id = ? AND path IN ?", userID, paths[:n]).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("read checksums: %w", err)
		}
		for _, r := range rows {
			out[r.Path] = r
		}
		paths = paths[n:]
	}
	return out, nil
}

func (s *dbStore) recordOf(ctx context.Context, userID, p string, _ *os.File) (models.DavChecksum, bool, error) {
	var rows []models.DavChecksum
	if err := s.db.WithContext(ctx).Where("user_id = ? AND path = ?", userID, p).Limit(1).Find(&rows).Error; err != nil {
		return models.DavChecksum{}, false, fmt.Errorf("read checksum record: %w", err)
	}
	if len(rows) == 0 {
		return models.DavChecksum{}, false, nil
	}
	return rows[0], true, nil
}

// etag includes the change time: the record is written just after the
// rename that publishes its version, and in between the new file must not
// wear the old version's generation alone.
func (s *dbStore) etag(fi fs.FileInfo, rec models.DavChecksum, ok bool) string {
	return posixETag(fi, rec, ok, true)
}

// sealUpload: the database record is written with the rename.
func (s *dbStore) sealUpload(*os.File, *models.DavChecksum) error { return nil }

// commitUpload renames under the path's stripe and group-commits the
// record (the stale-properties drop and the checksum) before releasing
// it, so two uploads of one path record in the order they renamed.
func (s *dbStore) commitUpload(ctx context.Context, c uploadCommit) error {
	mu := s.lockStripe(c.userID, c.path)
	mu.Lock()
	defer mu.Unlock()
	if err := c.publish(); err != nil {
		return err
	}
	*c.published = true
	if err := s.commitPut(ctx, &putMeta{userID: c.userID, path: c.path, created: c.created, sum: c.sum}); err != nil {
		return fmt.Errorf("record upload: %w", err)
	}
	return nil
}

// lockStripe serialises work on one path of one user within this process.
func (s *dbStore) lockStripe(userID, p string) *sync.Mutex {
	var x uint32 = 2166136261
	for i := 0; i < len(userID); i++ {
		x = (x ^ uint32(userID[i])) * 16777619
	}
	for i := 0; i < len(p); i++ {
		x = (x ^ uint32(p[i])) * 16777619
	}
	return &s.stripe[x%uint32(len(s.stripe))]
}

// recordSum compares and swaps: an upload that renames over the path
// after the stat below still writes its record after it, and a client can
// forge size and mtime, so the stat alone cannot tell its record from the
// hashed version's. Only the record read before hashing (or, if there was
// none, an empty place) is replaced; any record written since carries a
// new generation and stays.
func (s *dbStore) recordSum(ctx context.Context, root *os.Root, _ *os.File, before fs.FileInfo, sum models.DavChecksum, prior *models.DavChecksum) error {
	now, err := root.Stat(rel(sum.Path))
	if err != nil || statKey(now) != statKey(before) {
		// Replaced or changed meanwhile: its own upload records it.
		return nil
	}
	db := s.db.WithContext(ctx)
	if prior == nil {
		err = db.Clauses(clause.OnConflict{DoNothing: true}).Create(&sum).Error
	} else {
		err = db.Model(&models.DavChecksum{}).
			Where("user_id = ? AND path = ? AND gen = ? AND size = ? AND mtime_ns = ? AND sha1 = ? AND md5 = ?",
				sum.UserID, sum.Path, prior.Gen, prior.Size, prior.MtimeNs, prior.SHA1, prior.MD5).
			Updates(map[string]any{"size": sum.Size, "mtime_ns": sum.MtimeNs, "sha1": sum.SHA1, "md5": sum.MD5, "gen": sum.Gen}).Error
	}
	if err != nil {
		return fmt.Errorf("record checksum: %w", err)
	}
	return nil
}

// copySum: copyTx copies the rows.
func (s *dbStore) copySum(_, _ *os.File, _ fs.FileInfo) error { return nil }

func (s *dbStore) chtimes(tx *gorm.DB, root *os.Root, userID, p string, fi fs.FileInfo, mtime time.Time) error {
	if err := root.Chtimes(rel(p), mtime, mtime); err != nil {
		return err
	}
	// The content did not change: the recorded checksum follows.
	return tx.Model(&models.DavChecksum{}).
		Where("user_id = ? AND path = ? AND size = ? AND mtime_ns = ?", userID, p, fi.Size(), fi.ModTime().UnixNano()).
		Update("mtime_ns", mtime.UnixNano()).Error
}

// metaTables are the tables dbStore's *Tx methods keep in step with the
// resources.
var metaTables = []string{"dav_props", "dav_checksums"}

func (s *dbStore) dropPropsTx(tx *gorm.DB, userID, p string) error {
	return dropPropsAt(tx, userID, p)
}

// dropPropsAt deletes the dead properties' rows of p alone.
func dropPropsAt(tx *gorm.DB, userID, p string) error {
	if err := tx.Exec("DELETE FROM dav_props WHERE user_id = ? AND path = ?", userID, p).Error; err != nil {
		return fmt.Errorf("drop properties: %w", err)
	}
	return nil
}

func (s *dbStore) dropTx(tx *gorm.DB, userID, p string) error {
	return dropRows(tx, metaTables, userID, p)
}

func (s *dbStore) moveTx(tx *gorm.DB, userID, src, dst string) error {
	return moveRows(tx, metaTables, userID, src, dst)
}

// copyTx: checksums stay valid because copies keep the size and
// modification time.
func (s *dbStore) copyTx(tx *gorm.DB, userID, src, dst string, infinite bool) error {
	if err := copyProps(tx, userID, src, dst, infinite); err != nil {
		return err
	}
	cond, args := copyCond(tx, src, infinite)
	a := append([]any{dst, utf8.RuneCountInString(src) + 1, userID}, args...)
	if err := tx.Exec("INSERT INTO dav_checksums (user_id, path, size, mtime_ns, sha1, md5, gen) SELECT user_id, CAST(? AS TEXT) || substr(path, CAST(? AS INTEGER)), size, mtime_ns, sha1, md5, gen FROM dav_checksums WHERE user_id = ? AND "+cond, a...).Error; err != nil {
		return fmt.Errorf("copy checksums: %w", err)
	}
	return nil
}

// dropRows deletes the rows of tables at p and below.
func dropRows(tx *gorm.DB, tables []string, userID, p string) error {
	cond, args := subtree(tx, "path", p)
	args = append([]any{userID}, args...)
	for _, t := range tables {
		if err := tx.Exec("DELETE FROM "+t+" WHERE user_id = ? AND "+cond, args...).Error; err != nil {
			return fmt.Errorf("drop %s: %w", t, err)
		}
	}
	return nil
}

// moveRows renames the rows of tables at src and below to dst.
func moveRows(tx *gorm.DB, tables []string, userID, src, dst string) error {
	cond, args := subtree(tx, "path", src)
	for _, t := range tables {
		a := append([]any{dst, utf8.RuneCountInString(src) + 1, userID}, args...)
		if err := tx.Exec("UPDATE "+t+" SET path = CAST(? AS TEXT) || substr(path, CAST(? AS INTEGER)) WHERE user_id = ? AND "+cond, a...).Error; err != nil {
			return fmt.Errorf("move %s: %w", t, err)
		}
	}
	return nil
}

func copyCond(tx *gorm.DB, src string, infinite bool) (string, []any) {
	if infinite {
		return subtree(tx, "path", src)
	}
	return "path = ?", []any{src}
}

// copyProps copies the dead properties of src (and below when infinite)
// to dst.
func copyProps(tx *gorm.DB, userID, src, dst string, infinite bool) error {
	cond, args := copyCond(tx, src, infinite)
	a := append([]any{dst, utf8.RuneCountInString(src) + 1, userID}, args...)
	if err := tx.Exec("INSERT INTO dav_props (user_id, path, space, name, value, lang) SELECT user_id, CAST(? AS TEXT) || substr(path, CAST(? AS INTEGER)), space, name, value, lang FROM dav_props WHERE user_id = ? AND "+cond, a...).Error; err != nil {
		return fmt.Errorf("copy dead properties: %w", err)
	}
	return nil
}

// chooseMetaStore picks the store once, at construction: checksums on the
// files where the data directory keeps user extended attributes (probed)
// and the options allow it, else in the database.
func chooseMetaStore(db *gorm.DB, gen *generations, opts Options, log *slog.Logger) (metaStore, error) {
	base := newDBStore(db, gen)
	if opts.ChecksumsInDB {
		return base, nil
	}
	if err := probeXattrs(opts.Root); err != nil {
		log.Warn("webdav: the data directory keeps no user extended attributes; checksums go to the database", "root", opts.Root, "err", err)
		return base, nil
	}
	// Rows from a period on the database store would outlive the files
	// they describe (the attribute store never updates them) and could
	// match a later file of the same size and mtime if the database store
	// came back. Every replica on this volume probes the same filesystem,
	// so they agree on the store.
	if err := db.Exec("DELETE FROM dav_checksums").Error; err != nil {
		return nil, fmt.Errorf("webdav: drop database checksums: %w", err)
	}
	x := &xattrStore{dbStore: base, log: log}
	x.seen.max = maxSeenRecords
	return x, nil
}
