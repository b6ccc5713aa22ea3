package webdav

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// Moving trees between the two storage modes (ontoflow webdav
// migrate-store). Either direction is resumable: a file already at the
// destination with the source's size and modification time is skipped, so
// a run cut short is simply run again. Every copied file is verified: its
// SHA-256 read back from the destination must equal the one computed
// from the source. Dead properties and locks are keyed by path in the
// database and need no copy.

// MigrateOptions say what MigrateStore moves where.
type MigrateOptions struct {
	// Root is the POSIX data directory (a directory per user id).
	Root string
	// Contents is the object store of the tree mode.
	Contents contents.Store
	// ToContents copies POSIX trees into the tree mode; false copies the
	// tree mode's trees back to Root.
	ToContents bool
	// Progress receives a line at most every second; nil = none.
	Progress io.Writer
	// Logger; nil = slog.Default().
	Logger *slog.Logger
}

// MigrateStats count what a run did.
type MigrateStats struct {
	Users, Dirs, Files, Skipped int
	Bytes                       int64
}

type migration struct {
	db    *gorm.DB
	opts  MigrateOptions
	tree  *tree
	blobs *blobs
	st    MigrateStats
	last  time.Time
}

// MigrateStore copies every user's tree from one storage mode to the
// other (see MigrateOptions).
func MigrateStore(ctx context.Context, db *gorm.DB, opts MigrateOptions) (MigrateStats, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Root == "" || opts.Contents == nil {
		return MigrateStats{}, errors.New("migrate-store: a data directory and a contents store are required")
	}
	m := &migration{db: db, opts: opts, tree: newTree(db), blobs: &blobs{db: db, contents: opts.Contents, log: opts.Logger}}
	var err error
	if opts.ToContents {
		err = m.up(ctx)
	} else {
		err = m.down(ctx)
	}
	m.progress(true)
	return m.st, err
}

func (m *migration) progress(final bool) {
	if m.opts.Progress == nil || (!final && time.Since(m.last) < time.Second) {
		return
	}
	m.last = time.Now()
	fmt.Fprintf(m.opts.Progress, "migrate-store: %d users, %d folders, %d files copied (%.1f MiB), %d already there\n",
		m.st.Users, m.st.Dirs, m.st.Files, float64(m.st.Bytes)/(1<<20), m.st.Skipped)
}

// ---- POSIX -> tree + contents ----

func (m *migration) up(ctx context.Context) error {
	ents, err := os.ReadDir(m.opts.Root)
	if err != nil {
		return fmt.Errorf("read data directory: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := m.upUser(ctx, e.Name()); err != nil {
			return fmt.Errorf("user %s: %w", e.Name(), err)
		}
		m.st.Users++
	}
	return nil
}

func (m *migration) upUser(ctx context.Context, userID string) error {
	root, err := os.OpenRoot(filepath.Join(m.opts.Root, userID))
	if err != nil {
		return err
	}
	defer root.Close()
	rootID, err := m.tree.rootID(ctx, userID)
	if err != nil {
		return err
	}
	return m.upDir(ctx, root, userID, "/", rootID)
}

func (m *migration) upDir(ctx context.Context, root *os.Root, userID, dir string, dirID int64) error {
	d, err := root.Open(rel(dir))
	if err != nil {
		return err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		p := pathJoin(dir, e.Name())
		fi, err := root.Stat(rel(p)) // symlinks inside the root as their targets
		if err != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if fi.IsDir() {
			if e.Type()&fs.ModeSymlink != 0 {
				continue // no loops, as COPY
			}
			id, err := m.ensureDir(ctx, userID, dirID, e.Name(), fi)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			m.st.Dirs++
			if err := m.upDir(ctx, root, userID, p, id); err != nil {
				return err
			}
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if err := m.upFile(ctx, root, userID, p, dirID, fi); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		m.progress(false)
	}
	return nil
}

func (m *migration) child(ctx context.Context, userID string, parentID int64, name string) (*models.DavNode, error) {
	var ns []models.DavNode
	err := m.db.WithContext(ctx).Where("user_id = ? AND parent_id = ? AND name = ?", userID, parentID, name).Limit(1).Find(&ns).Error
	if err != nil || len(ns) == 0 {
		return nil, err
	}
	return &ns[0], nil
}

func (m *migration) ensureDir(ctx context.Context, userID string, parentID int64, name string, fi fs.FileInfo) (int64, error) {
	n, err := m.child(ctx, userID, parentID, name)
	if err != nil {
		return 0, err
	}
	if n != nil {
		if !n.Dir {
			return 0, errors.New("a file of that name is in the destination")
		}
		return n.ID, nil
	}
	n = &models.DavNode{UserID: userID, ParentID: parentID, Name: name, Dir: true, MtimeNs: fi.ModTime().UnixNano(), CreatedNs: creationTime(fi).UnixNano(), Version: 1}
	if err := m.db.WithContext(ctx).Create(n).Error; err != nil {
		return 0, err
	}
	return n.ID, nil
}

func (m *migration) upFile(ctx context.Context, root *os.Root, userID, p string, parentID int64, fi fs.FileInfo) error {
	old, err := m.child(ctx, userID, parentID, pathBase(p))
	if err != nil {
		return err
	}
	if old != nil && old.Dir {
		return errors.New("a collection of that name is in the destination")
	}
	if old != nil && old.Size == fi.Size() && old.MtimeNs == fi.ModTime().UnixNano() && old.SHA256 != "" {
		m.st.Skipped++
		return nil
	}
	f, err := root.Open(rel(p))
	if err != nil {
		return err
	}
	defer f.Close()
	hr := newHashReader(f, fi.Size())
	defer hr.close()
	n := &models.DavNode{UserID: userID, ParentID: parentID, Name: pathBase(p), Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano(),
		CreatedNs: creationTime(fi).UnixNano(), Version: 1}
	if fi.Size() > 0 {
		n.Blob = newBlobKey(userID)
		if err := m.blobs.begin(ctx, userID, n.Blob); err != nil {
			return err
		}
		size, err := m.opts.Contents.Put(ctx, n.Blob, hr, fi.Size(), m.blobs.hooks(n.Blob))
		if err == nil && size != fi.Size() {
			err = fmt.Errorf("read %d bytes of %d (the file changed during the copy)", size, fi.Size())
		}
		if err == nil {
			n.MD5, n.SHA1, n.SHA256 = hr.sums()
			err = m.verify(ctx, n)
		}
		if err != nil {
			m.blobs.abandon(ctx, n.Blob)
			return err
		}
	} else {
		n.MD5, n.SHA1, n.SHA256 = emptyMD5, emptySHA1, emptySHA256
	}
	err = m.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if n.Blob != "" {
			if err := goLiveTx(tx, n.Blob, n.Size); err != nil {
				return err
			}
		}
		if old == nil {
			return tx.Create(n).Error
		}
		return tx.Model(&models.DavNode{}).Where("id = ?", old.ID).Updates(map[string]any{
			"size": n.Size, "mtime_ns": n.MtimeNs, "md5": n.MD5, "sha1": n.SHA1, "sha256": n.SHA256, "blob_key": n.Blob, "version": old.Version + 1,
		}).Error
	})
	if err != nil {
		m.blobs.abandon(ctx, n.Blob)
		return err
	}
	if old != nil {
		_, _ = m.blobs.reclaim(ctx, old.Blob)
	}
	m.st.Files++
	m.st.Bytes += n.Size
	return nil
}

// verify reads the object back and compares its SHA-256.
func (m *migration) verify(ctx context.Context, n *models.DavNode) error {
	rc, err := m.opts.Contents.Get(ctx, n.Blob, 0, -1)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	defer rc.Close()
	h := sha256.New()
	k, err := io.Copy(h, rc)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if k != n.Size || hex.EncodeToString(h.Sum(nil)) != n.SHA256 {
		return fmt.Errorf("verification failed: %d bytes read back, SHA-256 differs or size does", k)
	}
	return nil
}

// ---- tree + contents -> POSIX ----

func (m *migration) down(ctx context.Context) error {
	var users []string
	if err := m.db.WithContext(ctx).Raw("SELECT user_id FROM dav_nodes WHERE parent_id = 0 ORDER BY user_id").Scan(&users).Error; err != nil {
		return fmt.Errorf("list trees: %w", err)
	}
	for _, u := range users {
		if err := m.downUser(ctx, u); err != nil {
			return fmt.Errorf("user %s: %w", u, err)
		}
		m.st.Users++
	}
	return nil
}

func (m *migration) downUser(ctx context.Context, userID string) error {
	dir := filepath.Join(m.opts.Root, userID)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	rootID, err := m.tree.rootID(ctx, userID)
	if err != nil {
		return err
	}
	return m.downDir(ctx, root, userID, "/", rootID)
}

func (m *migration) downDir(ctx context.Context, root *os.Root, userID, dir string, dirID int64) error {
	for after := ""; ; {
		ns, err := m.tree.list(ctx, userID, dirID, after, 1000)
		if err != nil {
			return err
		}
		for i := range ns {
			n := &ns[i]
			p := pathJoin(dir, n.Name)
			if n.Dir {
				if err := root.Mkdir(rel(p), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
					return fmt.Errorf("%s: %w", p, err)
				}
				m.st.Dirs++
				if err := m.downDir(ctx, root, userID, p, n.ID); err != nil {
					return err
				}
				mt := time.Unix(0, n.MtimeNs)
				_ = root.Chtimes(rel(p), mt, mt)
				continue
			}
			if err := m.downFile(ctx, root, userID, p, n); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			m.progress(false)
		}
		if len(ns) < 1000 {
			return nil
		}
		after = ns[len(ns)-1].Name
	}
}

func (m *migration) downFile(ctx context.Context, root *os.Root, userID, p string, n *models.DavNode) error {
	if fi, err := root.Stat(rel(p)); err == nil && fi.Mode().IsRegular() && fi.Size() == n.Size && fi.ModTime().UnixNano() == n.MtimeNs {
		m.st.Skipped++
		return nil
	}
	tmp := pathJoin(pathParent(p), randName())
	f, err := root.OpenFile(rel(tmp), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	err = m.fetch(ctx, f, n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	mt := time.Unix(0, n.MtimeNs)
	if err == nil {
		err = root.Chtimes(rel(tmp), mt, mt)
	}
	if err == nil {
		err = root.Rename(rel(tmp), rel(p))
	}
	if err != nil {
		root.Remove(rel(tmp))
		return err
	}
	if n.SHA1 != "" {
		sum := models.DavChecksum{UserID: userID, Path: p, Size: n.Size, MtimeNs: n.MtimeNs, SHA1: n.SHA1, MD5: n.MD5}
		if err := m.db.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&sum).Error; err != nil {
			return fmt.Errorf("record checksum: %w", err)
		}
	}
	m.st.Files++
	m.st.Bytes += n.Size
	return nil
}

// fetch writes n's contents to f, checking their SHA-256.
func (m *migration) fetch(ctx context.Context, f *os.File, n *models.DavNode) error {
	if n.Blob == "" {
		return nil
	}
	rc, err := m.opts.Contents.Get(ctx, n.Blob, 0, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	h := sha256.New()
	k, err := io.Copy(io.MultiWriter(f, h), rc)
	if err != nil {
		return err
	}
	if k != n.Size || (n.SHA256 != "" && hex.EncodeToString(h.Sum(nil)) != n.SHA256) {
		return errors.New("verification failed: the object's size or SHA-256 differs from the tree's")
	}
	return nil
}
