// Package storeurl reads the --webdav-store value. It imports nothing of
// the module, so config checks the flag without importing webdav.
package storeurl

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// URL is a parsed --webdav-store value.
type URL struct {
	// Kind is "posix" or "s3".
	Kind      string
	Bucket    string
	Prefix    string // without leading or trailing slash
	Endpoint  string // "" = AWS's own
	Region    string
	PathStyle bool
	// Secret names an Ontoflow secret holding "ACCESS_KEY:SECRET_KEY";
	// "" = the standard AWS credential chain.
	Secret string
}

// Parse reads "posix" or
// "s3://bucket/prefix?endpoint=http://host:port&region=us-east-1&path_style=true&secret=name".
func Parse(s string) (URL, error) {
	if s == "" || s == "posix" {
		return URL{Kind: "posix"}, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return URL{}, fmt.Errorf("webdav store %q: want posix or s3://bucket/prefix?endpoint=...&region=...", s)
	}
	q := u.Query()
	st := URL{Kind: "s3", Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"),
		Endpoint: q.Get("endpoint"), Region: q.Get("region"), Secret: q.Get("secret")}
	if v := q.Get("path_style"); v != "" {
		if st.PathStyle, err = strconv.ParseBool(v); err != nil {
			return URL{}, fmt.Errorf("webdav store: path_style %q: %w", v, err)
		}
	}
	for k := range q {
		switch k {
		case "endpoint", "region", "path_style", "secret":
		default:
			return URL{}, fmt.Errorf("webdav store: unknown parameter %q", k)
		}
	}
	if st.Region == "" {
		st.Region = "us-east-1"
	}
	return st, nil
}
