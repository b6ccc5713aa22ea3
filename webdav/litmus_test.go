package webdav

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// summaryRE matches litmus' per-suite summary, e.g.
// "<- summary for `basic': of 16 tests run: 16 passed, 0 failed. 100.0%"
// and the optional "-> 2 warnings were issued." line that follows.
var summaryRE = regexp.MustCompile("summary for `(\\w+)': of (\\d+) tests run: (\\d+) passed, (\\d+) failed")
var warnRE = regexp.MustCompile(`(\d+) warnings? w(?:as|ere) issued`)

// TestLitmus runs the litmus WebDAV compliance suite (all five suites,
// -k to keep going) against the handler and requires 104 of 104 passed
// with no warnings.
func TestLitmus(t *testing.T) {
	bin, err := exec.LookPath("litmus")
	if err != nil {
		t.Fatalf("litmus is required (apt-get install litmus): %v", err)
	}
	run := func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "litmus", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-k", e.base+"/", "litmus", testPass)
		cmd.Dir = t.TempDir()
		out, _ := cmd.CombinedOutput()
		text := string(out)
		total, passed, warnings := 0, 0, 0
		suites := map[string]bool{}
		for _, m := range summaryRE.FindAllStringSubmatch(text, -1) {
			suites[m[1]] = true
			n, _ := strconv.Atoi(m[2])
			p, _ := strconv.Atoi(m[3])
			total += n
			passed += p
		}
		for _, m := range warnRE.FindAllStringSubmatch(text, -1) {
			n, _ := strconv.Atoi(m[1])
			warnings += n
		}
		t.Logf("litmus: %d of %d passed, %d warnings, suites %v", passed, total, warnings, suites)
		if len(suites) != 5 || total != 104 || passed != 104 || warnings != 0 || strings.Contains(text, "FAIL") {
			t.Fatalf("litmus: want 104/104 passed with 0 warnings in 5 suites, got %d/%d, %d warnings, suites %v\n%s", passed, total, warnings, suites, text)
		}
	}
	eachMode(t, run)
	// The test-only backend: the protocol over a third storage, plugged
	// in with one registration.
	t.Run("memory", func(t *testing.T) {
		testdb.Each(t, func(t *testing.T, db *gorm.DB) { run(t, db, Options{backend: newMemBackend}) })
	})
}
