package webdav

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

// RecentMaxDirs bounds the folders Recent walks in the POSIX store, which
// keeps no index of modification times: a tree with more folders than
// this shows the most recent files among the first RecentMaxDirs folders
// walked breadth first from the root (by path), not of the whole tree.
const RecentMaxDirs = 200

// Recent lists up to limit of the user's files (never collections), most
// recently modified first. The tree store answers from the index on
// (user_id, dir, mtime_ns) of dav_nodes over the whole tree; the POSIX
// store walks at most RecentMaxDirs folders (see there).
func (h *Handler) Recent(ctx context.Context, userID string, limit int) ([]FileInfo, error) {
	if limit <= 0 {
		return nil, nil
	}
	return h.store.recent(ctx, userID, limit)
}

// recent answers from the index on (user_id, dir, mtime_ns) of
// dav_nodes over the whole tree.
func (b *nodeBackend) recent(ctx context.Context, userID string, limit int) ([]FileInfo, error) {
	ns, err := b.tree.recentFiles(ctx, userID, limit)
	if err != nil {
		return nil, err
	}
	paths, err := b.nodePaths(ctx, userID, ns)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(ns))
	for i := range ns {
		n := &ns[i]
		p, ok := paths[n.ID]
		if !ok || isReserved(p) {
			continue // moved or deleted while we read
		}
		out = append(out, FileInfo{Path: p, Size: nodeInfo{n}.Size(), ModTime: time.Unix(0, n.MtimeNs), ETag: nodeETag(n), SHA1: n.SHA1, MD5: n.MD5})
	}
	return out, nil
}

// nodePaths resolves the paths of nodes by reading their ancestors one
// level at a time (one query per level of the deepest node, whatever
// their number). A node whose chain does not reach the user's root is
// left out.
func (b *nodeBackend) nodePaths(ctx context.Context, userID string, ns []models.DavNode) (map[int64]string, error) {
	type link struct {
		parent int64
		name   string
	}
	known := map[int64]link{}
	want := map[int64]bool{}
	for _, n := range ns {
		known[n.ID] = link{n.ParentID, n.Name}
		want[n.ParentID] = true
	}
	for len(want) > 0 {
		ids := make([]int64, 0, len(want))
		for id := range want {
			if _, ok := known[id]; !ok && id != 0 {
				ids = append(ids, id)
			}
		}
		want = map[int64]bool{}
		if len(ids) == 0 {
			break
		}
		ps, err := b.tree.links(ctx, userID, ids)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			known[p.ID] = link{p.ParentID, p.Name}
			want[p.ParentID] = true
		}
	}
	out := make(map[int64]string, len(ns))
	for _, n := range ns {
		p, id := "", n.ID
		for depth := 0; id != 0; depth++ {
			l, ok := known[id]
			if !ok || depth > len(known) {
				p = ""
				break
			}
			if l.parent == 0 { // the root collection, named ""
				break
			}
			p = "/" + l.name + p
			id = l.parent
		}
		if p != "" {
			out[n.ID] = p
		}
	}
	return out, nil
}

// recentPosix walks the tree breadth first, at most RecentMaxDirs
// folders, keeping the limit most recently modified files.
func (b *posixBackend) recent(ctx context.Context, userID string, limit int) ([]FileInfo, error) {
	var out []FileInfo
	queue := []string{"/"}
	for walked := 0; len(queue) > 0 && walked < RecentMaxDirs; walked++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := queue[0]
		queue = queue[1:]
		fis, err := b.h.ReadDir(ctx, userID, d)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while we walked
			}
			return nil, fmt.Errorf("list %s for the user's recent files: %w", d, err)
		}
		sort.Slice(fis, func(i, j int) bool { return fis[i].Path < fis[j].Path })
		for _, fi := range fis {
			if fi.Dir {
				queue = append(queue, fi.Path)
				continue
			}
			out = append(out, fi)
		}
		sortRecent(out)
		if len(out) > limit {
			out = out[:limit]
		}
	}
	return out, nil
}

// sortRecent orders files newest first, then by path.
func sortRecent(fs []FileInfo) {
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].ModTime.Equal(fs[j].ModTime) {
			return fs[i].ModTime.After(fs[j].ModTime)
		}
		return fs[i].Path < fs[j].Path
	})
}
