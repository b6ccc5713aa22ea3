package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/ontoflow/ontoflow/webdav"
	"github.com/ontoflow/ontoflow/webdav/contents"
)

// webdavContents opens the contents store --webdav-store names: nil for
// posix (trees under --data-dir), else the S3 bucket, whose credentials
// come from an Ontoflow secret when the URL names one (secret=NAME, value
// "ACCESS_KEY:SECRET_KEY") and otherwise from the standard AWS chain.
func (a *App) webdavContents(ctx context.Context) (contents.Store, error) {
	st, err := webdav.ParseStoreURL(a.Cfg.WebDAVStore)
	if err != nil || st.Kind == "posix" {
		return nil, err
	}
	var creds *contents.Credentials
	if st.Secret != "" {
		if a.Secrets == nil {
			return nil, fmt.Errorf("webdav store: secret %q named but no secret store", st.Secret)
		}
		v, err := a.Secrets.Resolve(ctx, st.Secret)
		if err != nil {
			return nil, fmt.Errorf("webdav store: read secret %q: %w", st.Secret, err)
		}
		ak, sk, ok := strings.Cut(strings.TrimSpace(v), ":")
		if !ok || ak == "" || sk == "" {
			return nil, fmt.Errorf("webdav store: secret %q must hold ACCESS_KEY:SECRET_KEY", st.Secret)
		}
		creds = &contents.Credentials{AccessKey: ak, SecretKey: sk}
	}
	c, err := contents.OpenS3(ctx, st, creds)
	if err != nil {
		return nil, err
	}
	if err := c.Ping(ctx); err != nil {
		// Serve anyway: requests answer 503 until the store is back.
		a.Log.Warn("webdav store: bucket not reachable at start", "bucket", st.Bucket, "err", err)
	}
	return c, nil
}
