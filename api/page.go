package api

import (
	"encoding/base64"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
)

// Page is the shape of every list response.
type Page[T any] struct {
	Data          []T    `json:"data"`
	NextPageToken string `json:"next_page_token,omitempty"`
}

// PageRequest is a parsed ?page_size=&page_token= pair.
type PageRequest struct {
	Limit  int
	Offset int
}

// page_size's default and cap are defaults.PageSize and MaxPageSize.
const (
	defaultPageSize = defaults.PageSize
	maxPageSize     = defaults.MaxPageSize
)

// ParsePage reads page_size (1..500, default 50) and page_token (opaque,
// from a previous response).
func ParsePage(c *gin.Context) (PageRequest, error) {
	n, err := PageSize(c)
	pr := PageRequest{Limit: n}
	if err != nil {
		return pr, err
	}
	if t := c.Query("page_token"); t != "" {
		b, err := base64.RawURLEncoding.DecodeString(t)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 {
			return pr, apperr.New(apperr.InvalidArgument, "page_token is not a token this API issued")
		}
		pr.Offset = n
	}
	return pr, nil
}

// PageSize reads page_size (1..500, default 50).
func PageSize(c *gin.Context) (int, error) {
	s := c.Query("page_size")
	if s == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxPageSize {
		return defaultPageSize, apperr.New(apperr.InvalidArgument, "page_size must be an integer from 1 to %d", maxPageSize).
			WithDetails(apperr.Detail{Field: "page_size", Reason: "out_of_range", Message: "at most " + strconv.Itoa(maxPageSize)})
	}
	return n, nil
}

// NewPage builds a page from items fetched with Limit+1 rows: the extra row
// only tells whether another page exists.
func NewPage[T any](pr PageRequest, items []T) Page[T] {
	p := Page[T]{Data: items}
	if p.Data == nil {
		p.Data = []T{}
	}
	if len(items) > pr.Limit {
		p.Data = items[:pr.Limit]
		p.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(pr.Offset + pr.Limit)))
	}
	return p
}

// searchTerm reads a list's ?q= search; false when it is longer than
// defaults.MaxSearchBytes and the request already failed.
func searchTerm(c *gin.Context) (string, bool) {
	q := c.Query("q")
	if len(q) > defaults.MaxSearchBytes {
		fail(c, apperr.OverLimit("q", defaults.MaxSearchBytes, "bytes", len(q)))
		return "", false
	}
	return q, true
}
