package webdav

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/testdb"
)

// awkwardNames are file name stems a sync client must carry unchanged.
var awkwardNames = []string{
	"plain", "with space", "hash#tag", "100% done", "what?", "ünïcödé", "日本語", "emoji 🎉🚀",
	"a+b=c", "semi;colon", "[brackets]", "{braces}", "amp&er", "quote'single", "tilde~", "comma,dot.",
	"trailing.dots..", "@at", "dollar$", "mixed #?% é 🎈",
}

// TestRclone drives the Debian rclone against the handler: ~2,000 files
// with awkward names copied up, synced back, checked by hash, with
// modification times kept and the quota visible to "rclone about".
func TestRclone(t *testing.T) {
	bin, err := exec.LookPath("rclone")
	if err != nil {
		t.Fatalf("rclone is required (apt-get install rclone): %v", err)
	}
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		const quota = 1 << 30
		addUser(t, db, "sync", quota)
		e := newEnv(t, db, t.TempDir(), Options{})
		work := t.TempDir()
		src, back := filepath.Join(work, "src"), filepath.Join(work, "back")
		rng := rand.New(rand.NewPCG(1, 2))
		base := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
		n := 0
		for d := 0; d < 10; d++ {
			dir := filepath.Join(src, fmt.Sprintf("dir %d %s", d, awkwardNames[d*2%len(awkwardNames)]), awkwardNames[(d*3+1)%len(awkwardNames)])
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 200; i++ {
				name := fmt.Sprintf("%s %03d.txt", awkwardNames[i%len(awkwardNames)], i)
				data := make([]byte, rng.IntN(3000))
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				mt := base.Add(time.Duration(n) * time.Minute)
				if err := os.Chtimes(p, mt, mt); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
		conf := filepath.Join(work, "rclone.conf")
		if err := os.WriteFile(conf, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		rclone := func(args ...string) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"--config", conf}, args...)...)
			cmd.Env = append(os.Environ(), rcloneEnv(t, bin, e.base+"/", "sync")...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("rclone %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		rclone("copy", "--transfers", "8", src, "dav:tree")
		rclone("sync", "--transfers", "8", "dav:tree", back)
		if out := rclone("check", src, "dav:tree"); !strings.Contains(out, "0 differences found") || !strings.Contains(out, fmt.Sprintf("%d matching files", n)) {
			t.Fatalf("rclone check src vs server:\n%s", out)
		}
		// The check compares by hash: rclone says so when it cannot.
		if out := rclone("check", "--download=false", src, back); !strings.Contains(out, "0 differences found") {
			t.Fatalf("rclone check src vs synced copy:\n%s", out)
		}
		var list []struct {
			Path    string
			IsDir   bool
			ModTime time.Time
			Hashes  map[string]string
		}
		if err := json.Unmarshal([]byte(rclone("lsjson", "-R", "--hash", "--files-only", "dav:tree")), &list); err != nil {
			t.Fatalf("lsjson: %v", err)
		}
		if len(list) != n {
			t.Fatalf("lsjson lists %d files, want %d", len(list), n)
		}
		for _, f := range list {
			if len(f.Hashes["md5"]) != 32 || len(f.Hashes["sha1"]) != 40 {
				t.Fatalf("no hashes for %s: %v", f.Path, f.Hashes)
			}
			fi, err := os.Stat(filepath.Join(src, filepath.FromSlash(f.Path)))
			if err != nil {
				t.Fatalf("server lists %q, not in the source: %v", f.Path, err)
			}
			if !f.ModTime.Equal(fi.ModTime()) {
				t.Fatalf("%s: server mtime %v, source %v", f.Path, f.ModTime, fi.ModTime())
			}
			bi, err := os.Stat(filepath.Join(back, filepath.FromSlash(f.Path)))
			if err != nil || !bi.ModTime().Equal(fi.ModTime()) {
				t.Fatalf("%s: synced-back copy mtime wrong or missing: %v", f.Path, err)
			}
		}
		var about struct{ Total, Used, Free int64 }
		if err := json.Unmarshal([]byte(rclone("about", "--json", "dav:")), &about); err != nil {
			t.Fatalf("about: %v", err)
		}
		if about.Total != quota || about.Used <= 0 || about.Used+about.Free != quota {
			t.Fatalf("rclone about: %+v, want total %d", about, quota)
		}
	})
}

// rcloneEnv configures remote "dav" through environment variables.
func rcloneEnv(t *testing.T, bin, url, user string) []string {
	t.Helper()
	out, err := exec.Command(bin, "obscure", testPass).Output()
	if err != nil {
		t.Fatalf("rclone obscure: %v", err)
	}
	return []string{
		"RCLONE_CONFIG_DAV_TYPE=webdav",
		"RCLONE_CONFIG_DAV_URL=" + url,
		"RCLONE_CONFIG_DAV_VENDOR=owncloud",
		"RCLONE_CONFIG_DAV_USER=" + user,
		"RCLONE_CONFIG_DAV_PASS=" + strings.TrimSpace(string(out)),
	}
}
