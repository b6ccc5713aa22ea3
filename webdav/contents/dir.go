package contents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Dir keeps contents as files of one local directory: the tree
// mode without an S3 server, for unit tests and single-machine trials (it
// is no way to share contents between machines).
type Dir struct{ dir string }

// NewDir keeps contents under dir.
func NewDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create contents directory: %w", err)
	}
	return &Dir{dir: dir}, nil
}

// Kind implements Store.
func (d *Dir) Kind() string { return "dir" }

func (d *Dir) path(key string) string {
	return filepath.Join(d.dir, filepath.FromSlash(key))
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, _ int64, hooks PutHooks) (int64, error) {
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return 0, err
	}
	tmp := p + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return 0, err
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, struct{ io.Reader }{r}, *bp)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && hooks.Touch != nil {
		err = hooks.Touch(ctx)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return n, err
	}
	return n, nil
}

// Get implements Store.
func (d *Dir) Get(_ context.Context, key string, off, n int64) (io.ReadCloser, error) {
	f, err := os.Open(d.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoObject
	}
	if err != nil {
		return nil, err
	}
	if n < 0 {
		n = 1 << 62
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

// Delete implements Store.
func (d *Dir) Delete(_ context.Context, key string) error {
	err := os.Remove(d.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// AbortUpload implements Store: there are no multipart uploads.
func (d *Dir) AbortUpload(context.Context, string, string) error { return nil }

// Scan implements Store (reads every name: fine for tests).
func (d *Dir) Scan(_ context.Context, cursor string, limit int) ([]StoredObject, string, error) {
	var keys []StoredObject
	now := time.Now()
	err := filepath.WalkDir(d.dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasSuffix(p, ".part") {
			return nil
		}
		rel, _ := filepath.Rel(d.dir, p)
		key := filepath.ToSlash(rel)
		if key <= cursor {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		keys = append(keys, StoredObject{Key: key, AgeNs: int64(now.Sub(fi.ModTime()))})
		return nil
	})
	if err != nil {
		return nil, cursor, err
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Key < keys[j].Key })
	if len(keys) > limit {
		keys = keys[:limit]
		return keys, keys[limit-1].Key, nil
	}
	return keys, "", nil
}
