package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/webdav"
)

// The file picker of media_reference inputs: the signed-in user browses,
// searches and uploads into their own WebDAV tree from an action's form.
// Listings are read through the WebDAV handler's access API (both stores);
// an upload is a PUT served by the WebDAV handler itself for the user, so
// quota, size limits, locks and the store answer exactly as over WebDAV.

// Files is what the picker needs of the WebDAV handler (*webdav.Handler).
type Files interface {
	ReadDir(ctx context.Context, userID, p string) ([]webdav.FileInfo, error)
	// Recent lists the user's most recently modified files, newest first.
	Recent(ctx context.Context, userID string, limit int) ([]webdav.FileInfo, error)
	ServeFor(w http.ResponseWriter, r *http.Request, u *models.User)
}

// Bounds of a search by name: folders walked and matches shown.
const (
	searchMaxDirs    = 200
	searchMaxResults = 50
	// recentMax is how many recently modified files the picker offers.
	recentMax = 10
)

// refOf is the media reference naming path p of the user's tree.
func refOf(p string) string {
	return "webdav:" + strings.TrimPrefix(escapedTreePath(p), media.ReferencePrefix)
}

type fileEntry struct {
	Name, Path, Ref, Href string
	// Modified is shown for recent files.
	Modified string
	Dir      bool
	Size     int64
}

type filesView struct {
	Field, Dir, Query, CSRF string
	Crumbs                  []fileEntry
	Entries                 []fileEntry
	Searched, Truncated     bool
	// Recent: Entries are the user's most recently modified files, across
	// folders.
	Recent         bool
	Message, Error string
	// Picked is the reference an upload just made: console.js fills the
	// field with it.
	Picked string
}

// filesFragment lists a folder of the user's tree, or what matches q
// under it.
func (c *Console) filesFragment(g *gin.Context) {
	v, ok := c.filesView(g)
	if !ok {
		return
	}
	ctx, u := g.Request.Context(), principal(g).User
	var err error
	switch {
	case g.Query("recent") != "":
		v.Recent, v.Query = true, ""
		v.Entries, err = c.recentFiles(ctx, u.ID)
	case v.Query != "":
		v.Searched = true
		v.Entries, v.Truncated, err = c.searchFiles(ctx, u.ID, v.Dir, strings.ToLower(v.Query))
	default:
		v.Entries, err = c.listFiles(ctx, u.ID, v.Dir)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
		v.Error, v.Entries = "No such folder.", nil
	} else if err != nil {
		c.fail(g, fmt.Errorf("list %s of the user's files: %w", v.Dir, err))
		return
	}
	c.fragment(g, "files", v)
}

// filesView reads the picker's common parameters; false: refused (no
// files here, or a guest, whose session must not reach files).
func (c *Console) filesView(g *gin.Context) (*filesView, bool) {
	p := principal(g)
	if c.d.Files == nil || p.Guest {
		c.errorPage(g, http.StatusForbidden, "Files are not available to this session.")
		return nil, false
	}
	if err := searchBound(g.Query("q")); err != nil {
		c.fail(g, err)
		return nil, false
	}
	dir := cleanDir(g.Query("dir"))
	return &filesView{Field: g.Query("field"), Dir: dir, Query: strings.TrimSpace(g.Query("q")),
		CSRF: g.GetString(csrfKey), Crumbs: crumbs(dir)}, true
}

func cleanDir(d string) string {
	d = path.Clean("/" + d)
	if d == "." {
		return "/"
	}
	return d
}

func crumbs(dir string) []fileEntry {
	out := []fileEntry{{Name: "Files", Path: "/"}}
	p := ""
	for _, s := range strings.Split(strings.Trim(dir, "/"), "/") {
		if s == "" {
			continue
		}
		p += "/" + s
		out = append(out, fileEntry{Name: s, Path: p})
	}
	return out
}

func (c *Console) listFiles(ctx context.Context, userID, dir string) ([]fileEntry, error) {
	fis, err := c.d.Files.ReadDir(ctx, userID, dir)
	if err != nil {
		return nil, err
	}
	out := make([]fileEntry, 0, len(fis))
	for _, fi := range fis {
		out = append(out, entryOf(fi))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dir != out[j].Dir {
			return out[i].Dir
		}
		return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name)
	})
	return out, nil
}

// searchFiles walks the tree under dir breadth first, at most
// searchMaxDirs folders, for files and folders whose name contains q;
// truncated: the walk or the results hit their bound.
func (c *Console) searchFiles(ctx context.Context, userID, dir, q string) ([]fileEntry, bool, error) {
	var out []fileEntry
	queue := []string{dir}
	for walked := 0; len(queue) > 0; walked++ {
		if walked == searchMaxDirs {
			return out, true, nil
		}
		d := queue[0]
		queue = queue[1:]
		fis, err := c.d.Files.ReadDir(ctx, userID, d)
		if err != nil {
			if walked > 0 && errors.Is(err, fs.ErrNotExist) {
				continue // removed while we walked
			}
			return nil, false, err
		}
		sort.Slice(fis, func(i, j int) bool { return fis[i].Path < fis[j].Path })
		for _, fi := range fis {
			if fi.Dir {
				queue = append(queue, fi.Path)
			}
			if strings.Contains(strings.ToLower(path.Base(fi.Path)), q) {
				if len(out) == searchMaxResults {
					return out, true, nil
				}
				out = append(out, entryOf(fi))
			}
		}
	}
	return out, false, nil
}

// recentFiles lists the user's recentMax most recently modified files
// (the store's bounds apply: webdav.RecentMaxDirs in the POSIX store).
func (c *Console) recentFiles(ctx context.Context, userID string) ([]fileEntry, error) {
	fis, err := c.d.Files.Recent(ctx, userID, recentMax)
	if err != nil {
		return nil, err
	}
	out := make([]fileEntry, 0, len(fis))
	for _, fi := range fis {
		e := entryOf(fi)
		e.Modified = fi.ModTime.UTC().Format("2006-01-02 15:04 UTC")
		out = append(out, e)
	}
	return out, nil
}

func entryOf(fi webdav.FileInfo) fileEntry {
	e := fileEntry{Name: path.Base(fi.Path), Path: fi.Path, Dir: fi.Dir, Size: fi.Size}
	if !fi.Dir {
		e.Ref, e.Href = refOf(fi.Path), escapedTreePath(fi.Path)
	}
	return e
}

// uploadFile streams the multipart part "file" into the chosen folder
// through the WebDAV handler (a PUT for the signed-in user), answers what
// WebDAV answered as a message, and on success hands the new reference to
// the page. The CSRF token comes as a header: reading it from the form
// would buffer the whole upload first.
func (c *Console) uploadFile(g *gin.Context) {
	v, ok := c.filesView(g)
	if !ok {
		return
	}
	mr, err := g.Request.MultipartReader()
	if err != nil {
		v.Error = "Choose a file to upload."
		c.render(g, http.StatusBadRequest, "files", v)
		return
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			v.Error = "Choose a file to upload."
			c.render(g, http.StatusBadRequest, "files", v)
			return
		}
		if err != nil {
			v.Error = "The upload was cut off; try again."
			c.render(g, http.StatusBadRequest, "files", v)
			return
		}
		if part.FormName() == "file" && part.FileName() != "" {
			c.putPart(g, v, part)
			return
		}
	}
}

func (c *Console) putPart(g *gin.Context, v *filesView, part *multipart.Part) {
	name := path.Base("/" + strings.ReplaceAll(part.FileName(), "\\", "/"))
	if name == "/" || name == "." || name == ".." {
		v.Error = "That file has no usable name."
		c.render(g, http.StatusBadRequest, "files", v)
		return
	}
	p := path.Join(v.Dir, name)
	status := c.put(g, p, part)
	v.Entries, _ = c.listFiles(g.Request.Context(), principal(g).User.ID, v.Dir)
	switch status {
	case http.StatusCreated, http.StatusNoContent, http.StatusOK:
		v.Picked = refOf(p)
		v.Message = fmt.Sprintf("Uploaded %s.", name)
		c.render(g, http.StatusOK, "files", v)
		return
	case http.StatusInsufficientStorage:
		v.Error = "Your storage quota is full: delete files or ask for more space."
	case http.StatusRequestEntityTooLarge:
		v.Error = "That file is larger than this server accepts."
	case http.StatusLocked:
		v.Error = "A file of that name is locked by someone editing it; try again later or pick another name."
	case http.StatusConflict:
		v.Error = "That folder no longer exists."
	case http.StatusForbidden, http.StatusMethodNotAllowed:
		v.Error = "A file may not be written there (a reserved name or a folder)."
	default:
		v.Error = fmt.Sprintf("The upload failed (WebDAV answered %d %s).", status, http.StatusText(status))
	}
	c.render(g, http.StatusOK, "files", v)
}

// put serves a PUT of body at the user's path p through the WebDAV
// handler and returns its status.
func (c *Console) put(g *gin.Context, p string, body io.Reader) int {
	req, err := http.NewRequestWithContext(g.Request.Context(), http.MethodPut, escapedTreePath(p), io.NopCloser(body))
	if err != nil {
		return http.StatusBadRequest
	}
	req.ContentLength = -1 // streamed: the handler counts and limits it
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		req.Header.Set("Content-Type", t)
	}
	req.RemoteAddr = g.Request.RemoteAddr
	rec := &statusOnly{h: http.Header{}}
	c.d.Files.ServeFor(rec, req, principal(g).User)
	return rec.status
}

// statusOnly keeps what the page needs of a WebDAV answer: its status.
type statusOnly struct {
	h      http.Header
	status int
}

func (s *statusOnly) Header() http.Header { return s.h }
func (s *statusOnly) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}
func (s *statusOnly) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}

// offerFiles turns the picker on for the media inputs of the form when
// the session may reach its files.
func offerFiles(sections []sectionView, ok bool) {
	for i := range sections {
		for j := range sections[i].Fields {
			if sections[i].Fields[j].Kind == "media" {
				sections[i].Fields[j].Files = ok
			}
		}
	}
}

// isImage: a preview as an image is worth trying (the browser decides).
func isImage(href string) bool {
	switch strings.ToLower(path.Ext(href)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".bmp", ".ico":
		return true
	}
	return false
}

// rawHref is the console's own URL of the file a media input's value
// names in the user's tree ("" for any other value): the preview reads it
// with the session, as WebDAV itself takes Basic credentials only.
func rawHref(v string) string {
	p, ok := media.ReferencePath(strings.TrimSpace(v), nil)
	if !ok || p == "" {
		return ""
	}
	return Prefix + "/files/raw?path=" + url.QueryEscape(p)
}

// rawFile serves a file of the signed-in user's tree through the WebDAV
// handler (a GET for the user). Under the console's CSP nothing in it
// runs; anything but an image is a download, never a page of this origin.
func (c *Console) rawFile(g *gin.Context) {
	if _, ok := c.filesView(g); !ok {
		return
	}
	p := cleanDir(g.Query("path"))
	req, err := http.NewRequestWithContext(g.Request.Context(), http.MethodGet, escapedTreePath(p), nil)
	if err != nil || p == "/" {
		c.errorPage(g, http.StatusNotFound, "No such file.")
		return
	}
	for _, h := range []string{"If-None-Match", "If-Modified-Since", "Range"} {
		if x := g.GetHeader(h); x != "" {
			req.Header.Set(h, x)
		}
	}
	if !isImage(p) {
		g.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	}
	g.Header("Cache-Control", "private, no-cache")
	c.d.Files.ServeFor(g.Writer, req, principal(g).User)
}
