package webdav

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestCadaver is a smoke test with the cadaver command-line client:
// every command of a typical session succeeds and the data round-trips.
func TestCadaver(t *testing.T) {
	bin, err := exec.LookPath("cadaver")
	if err != nil {
		t.Fatalf("cadaver is required (apt-get install cadaver): %v", err)
	}
	eachMode(t, func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "cad", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		home := t.TempDir()
		u, _ := url.Parse(e.base)
		// cadaver reads credentials from ~/.netrc.
		if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine "+u.Hostname()+"\nlogin cad\npassword "+testPass+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "up.txt"), []byte("cadaver data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script := strings.Join([]string{
			"mkcol cad", "put up.txt cad/up.txt", "propset cad/up.txt color blue", "propget cad/up.txt color",
			"lock cad/up.txt", "discover cad/up.txt", "unlock cad/up.txt", "copy cad/up.txt cad/c.txt",
			"move cad/c.txt cad/m.txt", "ls cad", "get cad/m.txt down.txt", "delete cad/up.txt", "quit",
		}, "\n") + "\n"
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, e.base+"/")
		cmd.Dir = home
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		s := string(out)
		if err != nil {
			t.Fatalf("cadaver: %v\n%s", err, s)
		}
		if strings.Count(s, "succeeded") < 10 || strings.Contains(s, "failed") ||
			!strings.Contains(s, "Value of color is: blue") || !strings.Contains(s, "Lock token <opaquelocktoken:") ||
			!strings.Contains(s, "m.txt") {
			t.Fatalf("cadaver session:\n%s", s)
		}
		got, err := os.ReadFile(filepath.Join(home, "down.txt"))
		if err != nil || string(got) != "cadaver data\n" {
			t.Fatalf("downloaded %q, %v", got, err)
		}
	})
}
