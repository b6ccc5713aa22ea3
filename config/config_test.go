package config

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func bind(t *testing.T, mode Mode, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, check := Bind(fs, mode)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return cfg, check()
}

func TestDefaults(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	cfg, err := bind(t, ModeDev)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != "127.0.0.1:8080" || cfg.TemporalPort != 7233 || cfg.UIPort != 8233 {
		t.Errorf("dev listens on %s, temporal %d, UI %d", cfg.HTTPAddr, cfg.TemporalPort, cfg.UIPort)
	}
	if !strings.HasPrefix(cfg.DatabaseURL, "sqlite:") || !strings.HasSuffix(cfg.DatabaseURL, "ontoflow.db") {
		t.Errorf("dev database = %q", cfg.DatabaseURL)
	}
	if strings.Join(cfg.Markings, ",") != "public,confidential,pii" {
		t.Errorf("markings = %v", cfg.Markings)
	}
	if cfg.MaxBodyBytes != 4<<20 || cfg.WebDAVMaxUpload != 10<<30 || cfg.WebDAVMaxLockTTL != time.Hour || cfg.WebDAVChecksums != "auto" {
		t.Errorf("limits: body %d upload %d lock %s checksums %s", cfg.MaxBodyBytes, cfg.WebDAVMaxUpload, cfg.WebDAVMaxLockTTL, cfg.WebDAVChecksums)
	}
}

// migrate and users register no batch settings and must still validate.
func TestAdminMode(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	cfg, err := bind(t, ModeAdmin, "--data-dir", "/tmp/x")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != "sqlite:/tmp/x/ontoflow.db" {
		t.Errorf("admin database = %q", cfg.DatabaseURL)
	}
}

func TestEnvironmentAndFlags(t *testing.T) {
	t.Setenv("ONTOFLOW_MARKINGS", "low, high")
	t.Setenv("ONTOFLOW_WEBDAV_QUOTA", "5GiB")
	t.Setenv("DATABASE_URL", "postgres://x@db/ontoflow")
	cfg, err := bind(t, ModeServe, "--http-addr", "0.0.0.0:9000", "--webdav-max-upload", "1MiB")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Markings, ",") != "low,high" || cfg.WebDAVQuota != 5<<30 || cfg.HTTPAddr != "0.0.0.0:9000" ||
		cfg.WebDAVMaxUpload != 1<<20 || cfg.DatabaseURL != "postgres://x@db/ontoflow" || cfg.TemporalAddress != "127.0.0.1:7233" {
		t.Errorf("config = %+v", cfg)
	}
}

func TestRefusals(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		mode Mode
		args []string
		want string
	}{
		{"serve without database", map[string]string{"DATABASE_URL": ""}, ModeServe, nil, "DATABASE_URL"},
		{"worker without database", map[string]string{"DATABASE_URL": ""}, ModeWorker, nil, "DATABASE_URL"},
		{"duplicate marking", map[string]string{"ONTOFLOW_MARKINGS": "a,b,a"}, ModeDev, nil, "twice"},
		{"empty marking", map[string]string{"ONTOFLOW_MARKINGS": "a,,b"}, ModeDev, nil, "empty"},
		{"bad env integer", map[string]string{"ONTOFLOW_BATCH_MAX_ITEMS": "many"}, ModeDev, nil, "ONTOFLOW_BATCH_MAX_ITEMS"},
		{"bad env size", map[string]string{"ONTOFLOW_MAX_BODY": "huge"}, ModeDev, nil, "ONTOFLOW_MAX_BODY"},
		{"bad env duration", map[string]string{"ONTOFLOW_TOKEN_TTL": "forever"}, ModeDev, nil, "ONTOFLOW_TOKEN_TTL"},
		{"cert without key", nil, ModeDev, []string{"--tls-cert", "c.pem"}, "tls"},
		{"bad flag size", nil, ModeDev, []string{"--max-body", "-1"}, "byte size"},
		{"zero batch items", nil, ModeDev, []string{"--batch-child-items", "0"}, "positive"},
		{"unknown checksum store", map[string]string{"ONTOFLOW_WEBDAV_CHECKSUMS": "xattr"}, ModeDev, nil, "--webdav-checksums"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := bind(t, c.mode, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "4KiB": 4096, "512MiB": 512 << 20, "10GiB": 10 << 30, "1KB": 1000, "2 MB": 2e6, "7B": 7} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1.5GiB", "GiB", "99999999999999999999"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) accepted", in)
		}
	}
	for n, want := range map[int64]string{4 << 20: "4MiB", 10 << 30: "10GiB", 1000: "1000", 1536: "1536"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSecretsAndOutbound(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("ONTOFLOW_SECRET_KEY", "")
	t.Setenv("ONTOFLOW_SECRET_KEY_PREVIOUS", "")
	dev, err := bind(t, ModeDev, "--data-dir", "/tmp/d")
	if err != nil {
		t.Fatal(err)
	}
	if dev.Secrets.DevDir != "/tmp/d" || !dev.Secrets.CreateDevKey || dev.OutboundAllow.String() != "" || dev.SMTPURL != "" {
		t.Errorf("dev defaults: %+v allow %q smtp %q", dev.Secrets, dev.OutboundAllow, dev.SMTPURL)
	}
	admin, err := bind(t, ModeAdmin, "--data-dir", "/tmp/d")
	if err != nil || admin.Secrets.DevDir != "/tmp/d" || admin.Secrets.CreateDevKey {
		t.Errorf("admin commands must read the dev key file but never make it: %+v %v", admin.Secrets, err)
	}

	t.Setenv("DATABASE_URL", "postgres://x@db/ontoflow")
	t.Setenv("ONTOFLOW_SECRET_KEY", "k1")
	t.Setenv("ONTOFLOW_SECRET_KEY_PREVIOUS", "k2, k3")
	t.Setenv("ONTOFLOW_OUTBOUND_ALLOW", "127.0.0.1/32,hooks.internal:8443")
	cfg, err := bind(t, ModeWorker, "--secret-key-previous-file", "/run/prev", "--smtp-url", "smtp://mail:587", "--smtp-from", "a@b.c")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Secrets
	if s.Key != "k1" || strings.Join(s.Previous, "|") != "k2|k3" || s.PreviousFile != "/run/prev" || s.DevDir != "" {
		t.Errorf("worker secrets: %+v", s)
	}
	if cfg.OutboundAllow.String() != "127.0.0.1/32,hooks.internal:8443" || cfg.SMTP == nil || cfg.SMTP.Host != "mail" || cfg.SMTP.Port != 587 || cfg.SMTP.From != "a@b.c" {
		t.Errorf("worker outbound: %q %+v", cfg.OutboundAllow, cfg.SMTP)
	}
	if _, err := bind(t, ModeWorker, "--smtp-url", "http://mail", "--smtp-from", "a@b.c"); err == nil {
		t.Error("an http:// SMTP URL accepted")
	}
	if _, err := bind(t, ModeWorker, "--outbound-allow", "not-a-cidr"); err == nil || !strings.Contains(err.Error(), "outbound-allow") {
		t.Errorf("bad allowlist: %v", err)
	}
	if _, err := bind(t, ModeWorker, "--smtp-url", "smtp://mail:587"); err == nil {
		t.Error("--smtp-url without --smtp-from accepted")
	}
}
