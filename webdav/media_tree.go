package webdav

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// TreeMedia is the media.Store of tree mode (--webdav-store s3://...):
// the file's version comes from its dav_nodes row (the SHA-256 recorded
// when it was written, and the size, mtime and ETag the WebDAV handler
// serves), its bytes from the contents store. It reads only: a user with
// no tree yet gets media.ErrNoFile, not a new root row.
type TreeMedia struct {
	db       *gorm.DB
	tree     *tree
	contents contents.Store
}

// NewTreeMedia returns the tree-mode store over db's dav_nodes and
// contents (the same Contents as Options.Contents).
func NewTreeMedia(db *gorm.DB, contents contents.Store) (*TreeMedia, error) {
	if db == nil || contents == nil {
		return nil, errors.New("webdav media: tree mode needs the database and the contents store")
	}
	return &TreeMedia{db: db, tree: newTree(db), contents: contents}, nil
}

// Stat implements media.Store.
func (m *TreeMedia) Stat(ctx context.Context, userID, p string) (media.File, error) {
	n, mf, err := m.node(ctx, userID, p)
	if err != nil {
		return media.File{}, err
	}
	if mf.SHA256 == "" {
		if mf.SHA256, err = m.hash(ctx, n); err != nil {
			return media.File{}, err
		}
	}
	return mf, nil
}

// Open implements media.Store. The reader reads the object the node named
// when it was looked up: objects never change once written, so a PUT
// meanwhile (a new object, a new ETag) does not change what it reads. An
// object reclaimed between the lookup and the read is looked up once more,
// as the handler's GET does.
func (m *TreeMedia) Open(ctx context.Context, userID, p string) (io.ReadCloser, media.File, error) {
	for try := 0; ; try++ {
		n, mf, err := m.node(ctx, userID, p)
		if err != nil {
			return nil, media.File{}, err
		}
		if mf.SHA256 == "" {
			if mf.SHA256, err = m.hash(ctx, n); errors.Is(err, contents.ErrNoObject) && try == 0 {
				continue
			} else if err != nil {
				return nil, media.File{}, err
			}
		}
		rc, err := m.get(ctx, n)
		if errors.Is(err, contents.ErrNoObject) && try == 0 {
			continue
		}
		if err != nil {
			return nil, media.File{}, fmt.Errorf("webdav media: read %s: %w", mf.Path, err)
		}
		return rc, mf, nil
	}
}

// node looks p up in userID's tree, refusing anything but a file with one
// media.ErrNoFile, and describes it as the handler serves it.
func (m *TreeMedia) node(ctx context.Context, userID, p string) (*models.DavNode, media.File, error) {
	ip, ok := treePath(p)
	if !ok || ip == "/" || isReserved(ip) || !validUserID(userID) {
		return nil, media.File{}, media.ErrNoFile
	}
	root, err := m.tree.existingRootID(ctx, userID)
	if err != nil {
		return nil, media.File{}, noNode(err, "open the user's tree")
	}
	n, err := walk(ctx, m.db, userID, root, ip)
	if err != nil {
		return nil, media.File{}, noNode(err, "look up "+ip)
	}
	if n.Dir {
		return nil, media.File{}, media.ErrNoFile
	}
	return n, media.File{Path: ip, Size: nodeInfo{n}.Size(), ModTime: time.Unix(0, n.MtimeNs).UTC(),
		ETag: nodeETag(n), SHA256: n.SHA256}, nil
}

// get opens the node's contents from the start.
func (m *TreeMedia) get(ctx context.Context, n *models.DavNode) (io.ReadCloser, error) {
	if n.Blob == "" || n.Size == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	return m.contents.Get(ctx, n.Blob, 0, n.Size)
}

// hash computes the SHA-256 of a node whose row records none (written
// before the tree kept it); every file written over WebDAV has one.
func (m *TreeMedia) hash(ctx context.Context, n *models.DavNode) (string, error) {
	rc, err := m.get(ctx, n)
	if err != nil {
		return "", fmt.Errorf("webdav media: read %s: %w", n.Name, err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx: ctx, r: rc}); err != nil {
		return "", fmt.Errorf("webdav media: hash %s: %w", n.Name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// noNode is media.ErrNoFile for a path that names nothing, and what
// happened otherwise (the database unreachable is not "no file").
func noNode(err error, doing string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return media.ErrNoFile
	}
	return fmt.Errorf("webdav media: %s: %w", doing, err)
}
