package webdav

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ontoflow/ontoflow/models"
)

// TestGetSumAtBothWays: the record read by getxattrat(2) and through
// /proc (kernels before 6.13) is the same, and neither follows a symlink.
func TestGetSumAtBothWays(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := models.DavChecksum{Size: 3, MtimeNs: 9, Gen: 42}
	if err := setSum(f, want); err != nil {
		// As eachStore: the attribute store is what Linux runs on here.
		t.Fatalf("the test directory keeps no user extended attributes: %v", err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	defer noGetxattrat.Store(noGetxattrat.Load())
	for _, viaProc := range []bool{false, true} {
		noGetxattrat.Store(viaProc)
		if got, ok := getSumAt(d, "f"); !ok || got != want {
			t.Errorf("via /proc %v: %+v %v, want %+v", viaProc, got, ok, want)
		}
		if _, ok := getSumAt(d, "l"); ok {
			t.Errorf("via /proc %v: the symlink was followed", viaProc)
		}
		if _, ok := getSumAt(d, "../f"); ok {
			t.Errorf("via /proc %v: a path, not an entry name, was read", viaProc)
		}
	}
}
