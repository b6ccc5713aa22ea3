// Package config holds Ontoflow's configuration: every setting has a flag,
// an environment variable and a documented default (see --help and the
// README).
package config

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/notifications/senders"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
	"github.com/ontoflow/ontoflow/webdav/storeurl"
)

// Config is the configuration of every subcommand; each uses the part it
// needs.
type Config struct {
	DataDir     string
	HTTPAddr    string
	DatabaseURL string
	TLSCert     string
	TLSKey      string
	LogLevel    string
	LogFormat   string
	// MetricsAddr is where worker and dev serve /metrics on a listener of
	// their own ("" = none; dev and serve also answer on --http-addr).
	MetricsAddr string

	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	// Embedded Temporal (dev only).
	TemporalPort int
	UIPort       int
	UIURL        string
	// TemporalCacheSize bounds the embedded server's history cache
	// (workflows).
	TemporalCacheSize int

	AdminUser     string
	AdminPassword string
	Markings      auth.Levels

	MaxBodyBytes     int64
	TokenTTL         time.Duration
	UserCacheTTL     time.Duration
	WebDAVMaxUpload  int64
	WebDAVQuota      int64
	WebDAVMaxLockTTL time.Duration
	WebDAVMaxLocks   int
	WebDAVFsync      bool
	WebDAVChecksums  string
	// WebDAVStore is "posix" (trees under --data-dir) or an s3:// URL
	// (the tree in the database, contents in the bucket).
	WebDAVStore string
	// WebDAVSweepEvery is how often each replica sweeps unreferenced
	// objects and abandoned uploads in S3 mode.
	WebDAVSweepEvery time.Duration

	BatchMaxItems    int
	BatchSyncMax     int
	BatchChildItems  int
	BatchConcurrency int
	ShutdownTimeout  time.Duration
	ExecuteTimeout   time.Duration
	// BranchTTL is how long a what-if branch lives before it is purged.
	BranchTTL time.Duration
	// AbandonAfter is how long a keyed execution whose workflow never
	// started waits for the retry with its key before it is failed.
	AbandonAfter time.Duration
	// AutomationMaxDepth bounds chains of automations firing automations.
	AutomationMaxDepth int

	// Secrets says where the secret keys come from (ONTOFLOW_SECRET_KEY,
	// --secret-key-file, previous keys, and in dev the data directory's
	// key file); filled by the check Bind returns.
	Secrets               secrets.KeyConfig
	SecretKeyFile         string
	SecretKeyPreviousFile string
	// OutboundAllow opens internal targets to outbound calls.
	OutboundAllow *outbound.Allowlist
	// SMTPURL and SMTPFrom configure e-mail delivery ("" = no e-mail);
	// SMTP is them parsed (nil = no e-mail).
	SMTPURL  string
	SMTPFrom string
	// MaxRecipients bounds the recipients of one notification side effect.
	MaxRecipients int
	SMTP          *senders.SMTPConfig
	// PublicURL is the server's public base URL: absolute media
	// references to its WebDAV files, and the links pinned files carry
	// ("" = relative links).
	PublicURL string

	// OIDC configures sign-in with an OpenID Connect provider (Issuer ""
	// = off); filled by the check Bind returns.
	OIDC OIDCConfig
}

// OIDCConfig is the identity provider's settings, as flags give them.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret string
	Scopes                         []string
	UsernameClaim, GroupsClaim     string
	// Roles maps a group to roles (--oidc-role-map group:role,...).
	Roles          map[string][]string
	RequiredGroup  string
	ClearanceClaim string
	Label          string
	// PasswordLogin keeps the password form beside the provider's button.
	PasswordLogin bool
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

type bindings struct {
	fs   *flag.FlagSet
	errs []error
}

func (b *bindings) str(p *string, name, envKey, def, usage string) {
	b.fs.StringVar(p, name, env(envKey, def), fmt.Sprintf("%s (env %s)", usage, envKey))
}

func (b *bindings) int(p *int, name, envKey string, def int, usage string) {
	v := def
	if s, ok := os.LookupEnv(envKey); ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s: %q is not an integer", envKey, s))
		}
		v = n
	}
	b.fs.IntVar(p, name, v, fmt.Sprintf("%s (env %s)", usage, envKey))
}

func (b *bindings) bytes(p *int64, name, envKey string, def int64, usage string) {
	v := def
	if s, ok := os.LookupEnv(envKey); ok {
		n, err := ParseBytes(s)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s: %w", envKey, err))
		}
		v = n
	}
	b.fs.Func(name, fmt.Sprintf("%s, e.g. 512MiB (env %s) (default %s)", usage, envKey, FormatBytes(def)), func(s string) error {
		n, err := ParseBytes(s)
		*p = n
		return err
	})
	*p = v
}

func (b *bindings) bool(p *bool, name, envKey string, def bool, usage string) {
	v := def
	if s, ok := os.LookupEnv(envKey); ok {
		t, err := strconv.ParseBool(s)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s: %q is not a boolean", envKey, s))
		}
		v = t
	}
	b.fs.BoolVar(p, name, v, fmt.Sprintf("%s (env %s)", usage, envKey))
}

func (b *bindings) dur(p *time.Duration, name, envKey string, def time.Duration, usage string) {
	v := def
	if s, ok := os.LookupEnv(envKey); ok {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s: %w", envKey, err))
		}
		v = d
	}
	b.fs.DurationVar(p, name, v, fmt.Sprintf("%s (env %s)", usage, envKey))
}

// Mode selects which settings a subcommand registers.
type Mode int

const (
	ModeDev Mode = iota
	ModeServe
	ModeWorker
	ModeAdmin // migrate, users
)

// Bind registers the flags of mode on fs, with defaults from the
// environment, and returns the config they fill and a check to run after
// fs.Parse.
func Bind(fs *flag.FlagSet, mode Mode) (*Config, func() error) {
	c := &Config{}
	b := &bindings{fs: fs}
	var markings, outboundAllow string
	var oidcSecretFile, oidcScopes, oidcRoles string
	b.str(&c.DataDir, "data-dir", "ONTOFLOW_DATA_DIR", defaults.DataDir, "directory for the embedded database, Temporal's state and WebDAV files")
	b.str(&c.LogLevel, "log-level", "ONTOFLOW_LOG_LEVEL", defaults.LogLevel, "log level: debug, info, warn, error")
	b.str(&c.LogFormat, "log-format", "ONTOFLOW_LOG_FORMAT", defaults.LogFormat, "log format: text or json")
	b.str(&markings, "markings", "ONTOFLOW_MARKINGS", defaults.Markings, "ordered classification levels, lowest first (object markings and user clearances)")
	b.str(&c.SecretKeyFile, "secret-key-file", "ONTOFLOW_SECRET_KEY_FILE", "", "file holding the base64 32-byte key secrets are encrypted with; or set the key itself in ONTOFLOW_SECRET_KEY (dev default: <data-dir>/"+secrets.DevKeyFile+", generated once)")
	b.str(&c.SecretKeyPreviousFile, "secret-key-previous-file", "ONTOFLOW_SECRET_KEY_PREVIOUS_FILE", "", "file holding earlier secret keys, one a line, still read during a key rotation; or set them comma-separated in ONTOFLOW_SECRET_KEY_PREVIOUS")
	// No default: dev and admin derive it from data-dir in check.
	b.str(&c.DatabaseURL, "database-url", "DATABASE_URL", "", "database: postgres://... or sqlite:PATH (dev default: sqlite:<data-dir>/ontoflow.db)")
	if mode != ModeAdmin {
		b.str(&c.TemporalNamespace, "temporal-namespace", "TEMPORAL_NAMESPACE", defaults.TemporalNamespace, "Temporal namespace")
		b.str(&c.TaskQueue, "task-queue", "ONTOFLOW_TASK_QUEUE", defaults.TaskQueue, "Temporal task queue of the action engine")
		b.dur(&c.ShutdownTimeout, "shutdown-timeout", "ONTOFLOW_SHUTDOWN_TIMEOUT", defaults.ShutdownTimeout, "how long in-flight requests and activities get to finish on SIGTERM")
		b.int(&c.BatchChildItems, "batch-child-items", "ONTOFLOW_BATCH_CHILD_ITEMS", defaults.BatchChildItems, "batch items carried by one child workflow")
		b.int(&c.BatchConcurrency, "batch-concurrency", "ONTOFLOW_BATCH_CONCURRENCY", defaults.BatchConcurrency, "child workflows a batch runs at once")
		b.str(&outboundAllow, "outbound-allow", "ONTOFLOW_OUTBOUND_ALLOW", "", "internal targets outbound calls (webhooks, Slack, Teams) may reach, comma-separated CIDRs, IP:port and host:port; loopback, private, link-local and other special addresses are refused otherwise")
		b.str(&c.SMTPURL, "smtp-url", "ONTOFLOW_SMTP_URL", "", "SMTP server for e-mail notifications: smtp://user:pass@host:587 (STARTTLS required), smtps://host:465 (TLS), ?tls=opportunistic or ?tls=none to relax it; empty = no e-mail")
		b.str(&c.SMTPFrom, "smtp-from", "ONTOFLOW_SMTP_FROM", "", "sender address of e-mail notifications, e.g. \"Ontoflow <ontoflow@example.com>\"; required with --smtp-url")
		b.int(&c.MaxRecipients, "max-recipients", "ONTOFLOW_MAX_RECIPIENTS", defaults.MaxRecipients, "most recipients one notification side effect may have; one with more is recorded failed")
		b.str(&c.PublicURL, "public-url", "ONTOFLOW_PUBLIC_URL", "", "the server's public base URL, e.g. https://ontoflow.example.com: media references to its WebDAV files may be absolute under it, and notifications link pinned files with it (empty = relative links /webdav/...)")
	}
	if mode == ModeServe || mode == ModeWorker {
		b.str(&c.TemporalAddress, "temporal-address", "TEMPORAL_ADDRESS", defaults.TemporalAddress, "Temporal frontend host:port")
	}
	if mode == ModeDev || mode == ModeServe {
		b.str(&c.HTTPAddr, "http-addr", "ONTOFLOW_HTTP_ADDR", defaults.HTTPAddr, "API and WebDAV listen address")
		b.str(&c.TLSCert, "tls-cert", "ONTOFLOW_TLS_CERT", "", "serve HTTPS with this certificate (PEM); needs --tls-key")
		b.str(&c.TLSKey, "tls-key", "ONTOFLOW_TLS_KEY", "", "private key (PEM) for --tls-cert")
		b.bytes(&c.MaxBodyBytes, "max-body", "ONTOFLOW_MAX_BODY", defaults.MaxBodyBytes, "largest JSON request body")
		b.dur(&c.TokenTTL, "token-ttl", "ONTOFLOW_TOKEN_TTL", defaults.TokenTTL, "default lifetime of issued API tokens")
		b.dur(&c.UserCacheTTL, "user-cache-ttl", "ONTOFLOW_USER_CACHE_TTL", defaults.UserCacheTTL, "how long a user row read for Basic authentication is reused; changes made on other replicas are seen after at most this long (negative = off)")
		b.bytes(&c.WebDAVMaxUpload, "webdav-max-upload", "ONTOFLOW_WEBDAV_MAX_UPLOAD", defaults.WebDAVMaxUpload, "largest WebDAV upload (413 beyond)")
		b.bytes(&c.WebDAVQuota, "webdav-quota", "ONTOFLOW_WEBDAV_QUOTA", defaults.WebDAVQuota, "default per-user WebDAV quota; 0 = unlimited (a user's own quota_bytes wins)")
		b.dur(&c.WebDAVMaxLockTTL, "webdav-max-lock-timeout", "ONTOFLOW_WEBDAV_MAX_LOCK_TIMEOUT", defaults.MaxLockTimeout, "cap on WebDAV lock timeouts")
		b.bool(&c.WebDAVFsync, "webdav-fsync", "ONTOFLOW_WEBDAV_FSYNC", defaults.WebDAVFsync, "flush each WebDAV upload and copy to disk (file and directory) before answering, so it survives a power loss; off, as in Apache mod_dav_fs, the kernel writes it back within seconds")
		b.int(&c.WebDAVMaxLocks, "webdav-max-locks", "ONTOFLOW_WEBDAV_MAX_LOCKS", defaults.MaxLocksPerUser, "most active WebDAV locks one user may hold (507 beyond)")
		b.str(&c.WebDAVChecksums, "webdav-checksums", "ONTOFLOW_WEBDAV_CHECKSUMS", defaults.WebDAVChecksums, "where WebDAV content checksums are kept: auto (on the files as extended attributes where the filesystem supports them, else the database) or db")
		b.str(&c.WebDAVStore, "webdav-store", "ONTOFLOW_WEBDAV_STORE", defaults.WebDAVStore, "where WebDAV trees live: posix (a directory per user under --data-dir) or s3://bucket/prefix?endpoint=URL&region=R&path_style=true (the tree in the database, contents in S3; credentials from the AWS chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, shared files, or secret=NAME for an Ontoflow secret holding ACCESS_KEY:SECRET_KEY)")
		b.dur(&c.WebDAVSweepEvery, "webdav-sweep-interval", "ONTOFLOW_WEBDAV_SWEEP_INTERVAL", defaults.SweepInterval, "how often each replica sweeps S3 objects no file references and abandoned uploads (S3 mode)")
		b.int(&c.BatchMaxItems, "batch-max-items", "ONTOFLOW_BATCH_MAX_ITEMS", defaults.BatchMaxItems, "largest batch accepted by execute-batch (413 beyond)")
		b.int(&c.BatchSyncMax, "batch-sync-max", "ONTOFLOW_BATCH_SYNC_MAX", defaults.BatchSyncMax, "batches up to this size answer synchronously; larger ones answer 202")
		b.dur(&c.ExecuteTimeout, "execute-timeout", "ONTOFLOW_EXECUTE_TIMEOUT", defaults.ExecuteTimeout, "how long a synchronous execute waits before answering 202")
		b.dur(&c.BranchTTL, "branch-ttl", "ONTOFLOW_BRANCH_TTL", defaults.BranchTTL, "how long a what-if branch lives; expired branches are purged")
		b.dur(&c.AbandonAfter, "abandon-after", "ONTOFLOW_ABANDON_AFTER", defaults.AbandonAfter, "how long an execution whose workflow could not be started waits for the retry with its Idempotency-Key before it is recorded failed")
		b.int(&c.AutomationMaxDepth, "automation-max-depth", "ONTOFLOW_AUTOMATION_MAX_DEPTH", defaults.AutomationMaxDepth, "longest chain of automations firing automations: an event caused by an execution this many firings deep fires nothing (the firing is recorded skipped)")
		b.str(&c.OIDC.Issuer, "oidc-issuer", "ONTOFLOW_OIDC_ISSUER", "", "OpenID Connect issuer URL for console sign-in (empty = off); the redirect URL to register is {public-url}/ui/auth/callback")
		b.str(&c.OIDC.ClientID, "oidc-client-id", "ONTOFLOW_OIDC_CLIENT_ID", "", "client id registered at the OpenID provider")
		b.str(&oidcSecretFile, "oidc-client-secret-file", "ONTOFLOW_OIDC_CLIENT_SECRET_FILE", "", "file holding the OpenID client secret; or set the secret itself in ONTOFLOW_OIDC_CLIENT_SECRET (empty for a public client: PKCE alone)")
		b.str(&oidcScopes, "oidc-scopes", "ONTOFLOW_OIDC_SCOPES", defaults.OIDCScopes, "scopes asked of the OpenID provider, comma-separated (openid is always asked)")
		b.str(&c.OIDC.UsernameClaim, "oidc-username-claim", "ONTOFLOW_OIDC_USERNAME_CLAIM", defaults.OIDCUsernameClaim, "ID token claim a user's name comes from (the subject, sub, is the stable key)")
		b.str(&c.OIDC.GroupsClaim, "oidc-groups-claim", "ONTOFLOW_OIDC_GROUPS_CLAIM", defaults.OIDCGroupsClaim, "ID token claim holding the user's groups")
		b.str(&oidcRoles, "oidc-role-map", "ONTOFLOW_OIDC_ROLE_MAP", "", "roles given by groups, group:role pairs comma-separated (a group may appear more than once); a user's roles are set from it at every sign-in")
		b.str(&c.OIDC.RequiredGroup, "oidc-required-group", "ONTOFLOW_OIDC_REQUIRED_GROUP", "", "admit only members of this group; a user removed from it is disabled at their next sign-in (empty = every user the provider signs in)")
		b.str(&c.OIDC.ClearanceClaim, "oidc-clearance-claim", "ONTOFLOW_OIDC_CLEARANCE_CLAIM", "", "ID token claim holding the user's clearance, one of --markings (empty = the lowest level)")
		b.str(&c.OIDC.Label, "oidc-label", "ONTOFLOW_OIDC_LABEL", defaults.OIDCLabel, "the sign-in button reads \"Sign in with\" this")
		b.bool(&c.OIDC.PasswordLogin, "password-login", "ONTOFLOW_PASSWORD_LOGIN", defaults.PasswordLogin, "show the console's password form (with --oidc-issuer, false leaves only the provider's button; service users keep Basic on the API)")
		b.str(&c.UIURL, "temporal-ui-url", "ONTOFLOW_TEMPORAL_UI_URL", "", "Temporal Web UI base URL for workflow links (dev: the embedded UI)")
	}
	switch mode {
	case ModeWorker:
		b.str(&c.MetricsAddr, "metrics-addr", "ONTOFLOW_METRICS_ADDR", defaults.WorkerMetricsAddr, "listen address of /metrics (Prometheus; empty = off)")
	case ModeDev:
		b.str(&c.MetricsAddr, "metrics-addr", "ONTOFLOW_METRICS_ADDR", "", "also serve /metrics on this address (it is always on --http-addr)")
	}
	if mode == ModeDev {
		b.int(&c.TemporalPort, "temporal-port", "ONTOFLOW_TEMPORAL_PORT", defaults.TemporalPort, "embedded Temporal frontend port (0 = any free port)")
		b.int(&c.TemporalCacheSize, "temporal-cache-size", "ONTOFLOW_TEMPORAL_CACHE_SIZE", defaults.HistoryCacheSize,
			"workflows whose state the embedded Temporal server keeps cached (about 50 KB each); raise it for a dev process given more memory")
		b.int(&c.UIPort, "ui-port", "ONTOFLOW_UI_PORT", defaults.UIPort, "embedded Temporal Web UI port (0 = any free port, -1 = off)")
		b.str(&c.AdminUser, "admin-user", "ONTOFLOW_ADMIN_USER", defaults.AdminUser, "admin user created on first start")
		b.str(&c.AdminPassword, "admin-password", "ONTOFLOW_ADMIN_PASSWORD", "", "password of that admin user (generated and printed once if empty)")
	}
	check := func() error {
		if len(b.errs) > 0 {
			return b.errs[0]
		}
		c.Markings = nil
		for _, m := range strings.Split(markings, ",") {
			m = strings.TrimSpace(m)
			if m == "" {
				return fmt.Errorf("--markings: empty level in %q", markings)
			}
			if auth.Levels(c.Markings).Valid(m) {
				return fmt.Errorf("--markings: %q listed twice", m)
			}
			c.Markings = append(c.Markings, m)
		}
		if c.DatabaseURL == "" {
			if mode != ModeDev && mode != ModeAdmin {
				return fmt.Errorf("DATABASE_URL (or --database-url) is required")
			}
			c.DatabaseURL = "sqlite:" + filepath.Join(c.DataDir, "ontoflow.db")
		}
		if c.PublicURL != "" {
			if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("--public-url: expected an http(s) URL, got %q", c.PublicURL)
			}
		}
		if err := c.checkOIDC(oidcSecretFile, oidcScopes, oidcRoles); err != nil {
			return err
		}
		if (c.TLSCert == "") != (c.TLSKey == "") {
			return fmt.Errorf("--tls-cert and --tls-key go together")
		}
		if (mode == ModeDev || mode == ModeServe) && c.WebDAVChecksums != "auto" && c.WebDAVChecksums != "db" {
			return fmt.Errorf("--webdav-checksums: %q is neither auto nor db", c.WebDAVChecksums)
		}
		if mode == ModeDev || mode == ModeServe {
			if _, err := storeurl.Parse(c.WebDAVStore); err != nil {
				return fmt.Errorf("--webdav-store: %w", err)
			}
		}
		if mode == ModeDev && c.TemporalCacheSize < 1 {
			return fmt.Errorf("--temporal-cache-size must be positive")
		}
		if mode != ModeAdmin && (c.BatchChildItems < 1 || c.BatchConcurrency < 1) {
			return fmt.Errorf("--batch-child-items and --batch-concurrency must be positive")
		}
		var err error
		if c.OutboundAllow, err = outbound.ParseAllowlist(outboundAllow); err != nil {
			return err
		}
		if (c.SMTPURL == "") != (c.SMTPFrom == "") {
			return fmt.Errorf("--smtp-url and --smtp-from go together")
		}
		if c.SMTPURL != "" {
			smtp, err := senders.ParseSMTPURL(c.SMTPURL, c.SMTPFrom)
			if err != nil {
				return err
			}
			c.SMTP = &smtp
		}
		c.Secrets = c.secretKeys(mode)
		return nil
	}
	return c, check
}

// secretKeys says where the secret keys come from: the environment and
// the key files, and otherwise, in dev, the data directory's key file
// (made on first start); admin commands read that file but never make it.
func (c *Config) secretKeys(mode Mode) secrets.KeyConfig {
	k := secrets.KeyConfig{
		Key:          os.Getenv("ONTOFLOW_SECRET_KEY"),
		KeyFile:      c.SecretKeyFile,
		PreviousFile: c.SecretKeyPreviousFile,
	}
	for _, p := range strings.Split(os.Getenv("ONTOFLOW_SECRET_KEY_PREVIOUS"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			k.Previous = append(k.Previous, p)
		}
	}
	if mode == ModeDev || mode == ModeAdmin {
		k.DevDir, k.CreateDevKey = c.DataDir, mode == ModeDev
	}
	return k
}

// ParseBytes reads "1024", "4KiB", "512MiB", "10GiB" (also KB/MB/GB as
// powers of 1000).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			mult, s = u.mult, strings.TrimSpace(strings.TrimSuffix(s, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a byte size", s)
	}
	return n * mult, nil
}

// FormatBytes renders n in the largest exact binary unit.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return fmt.Sprintf("%d%s", n/u.m, u.s)
		}
	}
	return strconv.FormatInt(n, 10)
}
