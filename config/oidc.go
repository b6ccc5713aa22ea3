package config

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// checkOIDC completes c.OIDC from its flags: the client secret read from
// its file (or ONTOFLOW_OIDC_CLIENT_SECRET), the scopes and the role map
// parsed. Without an issuer the other settings are left unused.
func (c *Config) checkOIDC(secretFile, scopes, roles string) error {
	o := &c.OIDC
	if o.Issuer == "" {
		return nil
	}
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("--oidc-issuer: expected an http(s) URL, got %q", o.Issuer)
	}
	if o.ClientID == "" {
		return fmt.Errorf("--oidc-client-id is required with --oidc-issuer")
	}
	if c.PublicURL == "" {
		return fmt.Errorf("--public-url is required with --oidc-issuer: the provider redirects to {public-url}/ui/auth/callback")
	}
	o.ClientSecret = os.Getenv("ONTOFLOW_OIDC_CLIENT_SECRET")
	if secretFile != "" {
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		o.ClientSecret = strings.TrimSpace(string(b))
	}
	o.Scopes = []string{"openid"}
	for _, s := range strings.Split(scopes, ",") {
		if s = strings.TrimSpace(s); s != "" && s != "openid" {
			o.Scopes = append(o.Scopes, s)
		}
	}
	o.Roles = map[string][]string{}
	for _, pair := range strings.Split(roles, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		g, r, ok := strings.Cut(pair, ":")
		g, r = strings.TrimSpace(g), strings.TrimSpace(r)
		if !ok || g == "" || r == "" {
			return fmt.Errorf("--oidc-role-map: %q is not group:role", pair)
		}
		o.Roles[g] = append(o.Roles[g], r)
	}
	return nil
}
