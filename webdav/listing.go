package webdav

import (
	"html"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// listingHead is the page's fixed start: a table that reads on a phone
// (the name column wraps only at its own width, the table scrolls
// sideways rather than breaking words) and no script at all — the page is
// served under the same sandbox CSP as every user file.
const listingHead = `<!doctype html><meta charset=utf-8>` +
	`<meta name=viewport content="width=device-width,initial-scale=1">` +
	`<style>body{font:15px/1.4 system-ui,sans-serif;margin:1rem}` +
	`div{overflow-x:auto}table{border-collapse:collapse}` +
	`th,td{text-align:left;padding:.25rem .75rem .25rem 0;white-space:nowrap;vertical-align:top}` +
	`td.n{white-space:normal;overflow-wrap:normal;min-width:8rem}td.s{text-align:right}</style>`

// serveListing writes a readable HTML index of a collection for people
// who open the tree in a browser: name, size and modification time per
// entry, a parent link, folders marked by their trailing slash. Entries
// are streamed in the order the directory yields them, 256 at a time, so
// a folder of 100,000 files costs no more memory than one of ten.
func (rq *request) serveListing(dir fs.FileInfo) {
	w := rq.w
	rq.listingStart()
	if rq.r.Method == http.MethodHead {
		return
	}
	err := rq.tree.members(rq.r.Context(), rq.path, dir, 256, func(batch []entry, _ any) error {
		var b strings.Builder
		for _, e := range batch {
			rq.writeListingEntry(&b, pathBase(e.path), e.fi)
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
	if err != nil {
		rq.h.log.Error("webdav listing", "user", rq.user.Username, "path", rq.path, "err", err)
	}
	_, _ = io.WriteString(w, "</tbody></table></div>\n")
}

// listingStart writes the listing's headers and, unless HEAD, the page's
// start down to the table's first row.
func (rq *request) listingStart() {
	w := rq.w
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'")
	if rq.r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	title := html.EscapeString(collectionName(rq.path))
	var b strings.Builder
	b.WriteString(listingHead)
	b.WriteString("<title>Index of " + title + "</title><h1>Index of " + title + "</h1>")
	b.WriteString("<div><table><thead><tr><th>Name<th>Size<th>Modified (UTC)</thead><tbody>\n")
	if rq.path != "/" {
		href := rq.h.href(path.Dir(rq.path), true)
		b.WriteString(`<tr><td class=n><a href="` + html.EscapeString(href) + `">../</a> (parent folder)<td class=s><td>` + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}

// writeListingEntry writes one entry named base, fi its details.
func (rq *request) writeListingEntry(b *strings.Builder, base string, fi fs.FileInfo) {
	isDir := fi.IsDir()
	name := base
	if isDir {
		name += "/"
	}
	b.WriteString(`<tr><td class=n><a href="`)
	b.WriteString(html.EscapeString(rq.h.href(pathJoin(rq.path, base), isDir)))
	b.WriteString(`">` + html.EscapeString(name) + `</a><td class=s>`)
	if !isDir {
		b.WriteString(`<span title="` + strconv.FormatInt(fi.Size(), 10) + ` bytes">` + humanSize(fi.Size()) + `</span>`)
	}
	b.WriteString("<td>")
	b.WriteString(fi.ModTime().UTC().Format(time.DateTime))
	b.WriteString("\n")
}

// collectionName is how a folder is named on its page: with the trailing
// slash that marks a collection ("/" for the root).
func collectionName(p string) string {
	if p == "/" {
		return "/"
	}
	return strings.TrimSuffix(p, "/") + "/"
}

// humanSize writes a size the way file managers do (1024-based, one
// decimal below 10 units); the exact byte count is in the cell's title.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	prec := 0
	if v < 10 {
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + string("KMGTPE"[i]) + "iB"
}
