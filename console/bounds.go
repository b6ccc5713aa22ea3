package console

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
)

// The console's bounds on what one request can make long (defaults,
// "Request bounds"): each refusal is the error page with 400 naming the
// parameter and the cap.

// exploreBounds refuses a table URL beyond the explorer's caps before
// anything is read: more than defaults.MaxColumns entries in cols, a
// search longer than defaults.MaxSearchBytes, a page number past
// pageNumber's cap, or a query string longer than
// defaults.MaxExplorerQueryBytes. Every link of the page carries the
// table's state again, so these caps are what keep a page's size linear
// in the columns it shows.
func exploreBounds(u *url.URL) error {
	q := u.Query()
	for _, cols := range q["cols"] {
		if n := strings.Count(cols, ",") + 1; n > defaults.MaxColumns {
			return apperr.OverLimit("cols", defaults.MaxColumns, "columns", n)
		}
	}
	for _, s := range q["q"] {
		if len(s) > defaults.MaxSearchBytes {
			return apperr.OverLimit("q", defaults.MaxSearchBytes, "bytes", len(s))
		}
	}
	if _, err := pageNumber(q.Get("page"), "page"); err != nil {
		return err
	}
	if n := len(u.RawQuery); n > defaults.MaxExplorerQueryBytes {
		return apperr.OverLimit("query string", defaults.MaxExplorerQueryBytes, "bytes", n)
	}
	return nil
}

// searchBound refuses a search term longer than defaults.MaxSearchBytes
// (each is matched against every searchable property of a type).
func searchBound(q string) error {
	if len(q) > defaults.MaxSearchBytes {
		return apperr.OverLimit("q", defaults.MaxSearchBytes, "bytes", len(q))
	}
	return nil
}

// pageNumber reads an offset page number (param: ?page= of the log
// and of the explorer's old links, ?links_page= of an object's links): a
// missing or malformed one is the first page, as before; one past
// defaults.MaxPageNumber is refused, since its offset (the number times
// the page size) would overflow into a negative OFFSET, which Postgres
// answers with an error (a 500).
func pageNumber(s, param string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) || n > defaults.MaxPageNumber {
		return 0, apperr.OverLimit(param, defaults.MaxPageNumber, "pages", n)
	}
	return max(n, 0), nil
}
